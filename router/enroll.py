"""Edge router enrollment from the JWT ``POST /edge-routers`` gives, as the real router does it.

1. The JWT's issuer is the controller; its TLS server certificate (fetched without trusting it yet)
   must carry the key that signed the JWT.
2. The CA bundle comes from ``/.well-known/est/cacerts``, fetched trusting that certificate only.
3. One EC P-256 key; a client CSR and a server CSR (common name: the router id; SANs: the advertised
   host, ``localhost``, ``127.0.0.1``) go to ``POST /edge/client/v1/enroll?method=erott&token=...``.
4. The key, both certificates, the CA bundle and ``config.json`` are written owner-only in the data folder.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import os
import socket
import ssl
from pathlib import Path
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs7
from cryptography.x509.oid import NameOID

#: the real quickstart's control channel port, when the JWT names no controller address
DEFAULT_CTRL_PORT = 6262
FILES = {
    "key": "key.pem",
    "cert": "cert.pem",
    "server_cert": "server.cert.pem",
    "ca": "ca.pem",
    "config": "config.json",
}


class EnrollError(Exception):
    """Enrollment failed; ``exit_code`` is the command line's (1 refused, 2 bad input, 3 unreachable)."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code


def read_claims(token: str) -> dict:
    import jwt  # here, not at the top: `router run` needs neither JWT nor HTTP

    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError as ex:
        raise EnrollError(f"the file is not an enrollment JWT ({ex})", 2) from None
    if claims.get("em") not in ("erott",):
        raise EnrollError(f"the JWT is for enrollment method {claims.get('em')!r}, not an edge router (erott)", 2)
    for claim in ("iss", "sub", "jti"):
        if not isinstance(claims.get(claim), str) or not claims[claim]:
            raise EnrollError(f"the JWT has no {claim} claim", 2)
    return claims


def server_certificate(issuer: str) -> x509.Certificate:
    """The controller's TLS leaf, not trusted yet (it is checked by the JWT's signature next)."""
    parts = urlsplit(issuer)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        with socket.create_connection((parts.hostname, parts.port or 443), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname=parts.hostname) as tls:
                return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True))
    except OSError as ex:
        raise EnrollError(f"cannot reach the controller at {issuer}: {ex.strerror or ex}", 3) from None


def verified_claims(token: str) -> tuple[dict, x509.Certificate]:
    import jwt

    claims = read_claims(token)
    leaf = server_certificate(claims["iss"])
    algorithm = jwt.get_unverified_header(token).get("alg")
    try:
        jwt.decode(
            token,
            leaf.public_key(),
            algorithms=[algorithm or "RS256"],
            options={"verify_aud": False, "verify_exp": True},
        )
    except jwt.ExpiredSignatureError:
        raise EnrollError("the enrollment JWT has expired: create a new one (re-enroll the router)", 1) from None
    except jwt.PyJWTError as ex:
        raise EnrollError(f"the JWT is not signed by the controller at {claims['iss']} ({ex})", 1) from None
    return claims, leaf


def fetch_ca_bundle(issuer: str, leaf: x509.Certificate) -> str:
    import httpx

    context = ssl.create_default_context(cadata=leaf.public_bytes(serialization.Encoding.PEM).decode())
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    try:
        response = httpx.get(issuer + "/.well-known/est/cacerts", verify=context, timeout=10)
    except httpx.HTTPError as ex:
        raise EnrollError(f"cannot fetch the CA bundle from {issuer}: {ex}", 3) from None
    if response.status_code != 200:
        raise EnrollError(f"the controller answered {response.status_code} for its CA bundle", 1)
    certs = pkcs7.load_der_pkcs7_certificates(base64.b64decode(response.content))
    return "".join(cert.public_bytes(serialization.Encoding.PEM).decode() for cert in certs)


def csr(key, router_id: str, hosts: list[str]) -> str:
    sans = []
    for host in dict.fromkeys(hosts):
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host.strip("[]"))))
        except ValueError:
            sans.append(x509.DNSName(host))
    request = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, router_id)]))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .sign(key, hashes.SHA256())
    )
    return request.public_bytes(serialization.Encoding.PEM).decode()


def enroll(
    token: str, data: Path, *, advertise: str, link_advertise: str | None = None, ctrl: str | None = None
) -> dict:
    """Enroll and write the data folder; returns the config written."""
    import httpx

    claims, leaf = verified_claims(token)
    issuer, router_id = claims["iss"], claims["sub"]
    ca_pem = fetch_ca_bundle(issuer, leaf)
    advertise_host = advertise.rpartition(":")[0].strip("[]") or advertise
    key = ec.generate_private_key(ec.SECP256R1())
    hosts = [advertise_host, "localhost", "127.0.0.1"]
    if link_advertise:
        hosts.insert(1, link_advertise.rpartition(":")[0].strip("[]"))
    body = {"certCsr": csr(key, router_id, hosts), "serverCertCsr": csr(key, router_id, hosts)}
    context = ssl.create_default_context(cadata=ca_pem)
    try:
        response = httpx.post(
            issuer + "/edge/client/v1/enroll",
            params={"method": "erott", "token": claims["jti"]},
            json=body,
            verify=context,
            timeout=30,
        )
    except httpx.HTTPError as ex:
        raise EnrollError(f"cannot reach the controller at {issuer}: {ex}", 3) from None
    if response.status_code != 200:
        try:
            message = response.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = response.text[:200]
        raise EnrollError(f"the controller refused the enrollment ({response.status_code}): {message}", 1)
    certs = response.json()["data"]
    ctrls = [address for address in claims.get("ctrls") or [] if isinstance(address, str)]
    host = urlsplit(issuer).hostname
    config = {
        "routerId": router_id,
        "controller": issuer,
        "ctrl": ctrl or (ctrls[0] if ctrls else f"tls:{host}:{DEFAULT_CTRL_PORT}"),
        # a cluster's members, as the JWT lists them: the router dials them all at its first start
        "ctrls": [ctrl] if ctrl else ctrls,
        "advertise": advertise,
        "linkAdvertise": link_advertise,
    }
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    write_private(
        data,
        {
            FILES["key"]: key_pem,
            FILES["cert"]: certs["cert"],
            FILES["server_cert"]: certs["serverCert"],
            FILES["ca"]: certs.get("ca") or ca_pem,
            FILES["config"]: json.dumps(config, indent=2) + "\n",
        },
    )
    return config


def write_private(folder: Path, files: dict[str, str]) -> None:
    """Each file owner-only, written whole (temporary name, then rename) in an owner-only folder."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(folder, 0o700)
    for name, text in files.items():
        temporary = folder / f".{name}.tmp"
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as out:
            out.write(text)
        os.replace(temporary, folder / name)


def load(data: Path) -> tuple[dict, dict[str, str]]:
    """``config.json`` and the PEM files of an enrolled data folder."""
    try:
        config = json.loads((data / FILES["config"]).read_text())
        pems = {name: (data / FILES[name]).read_text() for name in ("key", "cert", "server_cert", "ca")}
    except FileNotFoundError as ex:
        raise EnrollError(
            f"{data} holds no enrolled router ({Path(ex.filename).name} missing): run enroll first", 2
        ) from None
    except ValueError:
        raise EnrollError(f"{data / FILES['config']} is not JSON: enroll again", 2) from None
    return config, pems


def enrolled_controllers(config: dict) -> list[str]:
    """The control channel addresses a router dials at its first start: every member its JWT listed (``ctrls``),
    unless ``ctrl`` was changed since to an address that list lacks (a controller moved: that one alone)."""
    ctrls = config.get("ctrls") or []
    return ctrls if config["ctrl"] in ctrls else [config["ctrl"]]
