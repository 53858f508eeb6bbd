"""Flow drivers: the multi-step things SDKs and routers do, one call each.

Every flow talks to the controller only through a :class:`~harness.client.ZitiClient`
(in-process or over the network); certificates and keys come from
:mod:`harness.client.pki`, never from the controller's own PKI code.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import jwt
import pyotp
from cryptography import x509

from harness.client import ZitiClient
from harness.client import pki as hp
from harness.client.enroll import EnrolledIdentity, ott_csr, parse_cacerts, pem_bundle, verify_enrollment_jwt

PEM_TEXT = {"content-type": "text/plain"}


def jwt_claims(token: str, server_cert: x509.Certificate | None = None) -> dict:
    """An enrollment JWT's claims; checked against ``server_cert`` when given (as SDKs do)."""
    if server_cert is not None:
        return verify_enrollment_jwt(token, server_cert)
    return jwt.decode(token, options={"verify_signature": False})


def ca_bundle(client: ZitiClient) -> str:
    """The controller's CA bundle, read from ``/.well-known/est/cacerts``."""
    return pem_bundle(parse_cacerts(client.edge.list_well_known_cas()))


# -- enrollment ---------------------------------------------------------------


def enroll_ott(
    client: ZitiClient, token: str, *, key_type: str = "ec", server_cert: x509.Certificate | None = None
) -> EnrolledIdentity:
    """Enroll by one-time token with a fresh key and CSR, as the C SDK does.

    Args:
        client: a client of the controller (no session needed).
        token: the enrollment JWT.
        key_type: ``ec`` (P-256, the SDK default) or ``rsa``.
        server_cert: check the JWT's signature against this TLS certificate.

    Returns:
        The identity file's contents (certificate chain, key, CA bundle).
    """
    claims = jwt_claims(token, server_cert)
    return submit_ott_csr(client, claims["jti"], claims["sub"], claims["iss"], key_type=key_type)


def submit_ott_csr(
    client: ZitiClient, token_id: str, subject: str, api_url: str, *, key_type: str = "ec"
) -> EnrolledIdentity:
    """The second half of ott enrollment: a fresh key and an SDK-shaped CSR for one-time token ``token_id``.

    Args:
        client: a client of the controller (no session needed).
        token_id: the enrollment's token (the JWT's ``jti``).
        subject: the CSR's common name (the JWT's ``sub``, the identity id).
        api_url: the controller URL the CSR names (the JWT's ``iss``).
        key_type: ``ec`` or ``rsa``.

    Returns:
        The identity file's contents (certificate chain, key, CA bundle).
    """
    ca = ca_bundle(client)
    csr, key = ott_csr(subject, api_url, key_type)
    data = client.edge.call("enroll", method="ott", token=token_id, content=csr, headers=PEM_TEXT)
    return EnrolledIdentity(api_url, data["cert"], hp.key_pem(key), ca)


def enroll_updb(client: ZitiClient, token: str, password: str) -> None:
    """Enroll by username/password (the username was chosen at creation)."""
    claims = jwt_claims(token)
    client.edge.call("enroll", method="updb", token=claims["jti"], body={"password": password})


def enroll_ottca(client: ZitiClient, token: str) -> None:
    """Enroll by one-time token with the third-party certificate the client presents."""
    client.edge.call("enroll", method="ottca", token=jwt_claims(token)["jti"], body={})


def enroll_ca(client: ZitiClient, name: str | None = None) -> None:
    """CA auto enrollment with the certificate the client presents."""
    client.edge.call("enroll", method="ca", body={"name": name} if name else {})


def ca_verification_proof(client: ZitiClient, ca_id: str, ca: hp.CertKey, *, now=None) -> str:
    """A certificate ``ca`` signs whose common name is the registered CA's verification token (PEM)."""
    token = client.management.detail_ca(ca_id)["verificationToken"]
    return hp.make_leaf(ca, token, now=now).cert_pem


def verify_ca(client: ZitiClient, ca_id: str, ca: hp.CertKey, *, now=None) -> None:
    """Prove possession of a registered third-party CA's key, as an administrator does.

    Args:
        client: an admin client.
        ca_id: the CA registered with ``createCa``.
        ca: that CA's certificate and key (from :mod:`harness.client.pki`).
        now: the moment the proof is dated from (the controller clock in tests).
    """
    proof = ca_verification_proof(client, ca_id, ca, now=now)
    client.management.call("verifyCa", ca_id, content=proof, headers=PEM_TEXT)


@dataclass
class RouterCertificates:
    cert_pem: str
    server_cert_pem: str
    ca_pem: str
    key_pem: str
    server_key_pem: str


def enroll_router(client: ZitiClient, token: str, *, hostnames: tuple[str, ...] = ("localhost",)) -> RouterCertificates:
    """Enroll an edge or transit router (``erott``/``trott``): client and server certificates."""
    claims = jwt_claims(token)
    client_csr, client_key = hp.make_csr(claims["sub"], o="OpenZiti")
    server_csr, server_key = hp.make_csr(claims["sub"], o="OpenZiti", dns=hostnames)
    data = client.edge.call(
        "enroll",
        method=claims.get("em", "erott"),
        token=claims["jti"],
        body={"certCsr": hp.csr_pem(client_csr), "serverCertCsr": hp.csr_pem(server_csr)},
    )
    return RouterCertificates(
        data["cert"], data["serverCert"], data.get("ca", ""), hp.key_pem(client_key), hp.key_pem(server_key)
    )


def write_identity_file(identity: EnrolledIdentity, path: str | Path) -> Path:
    """Write the identity file a real SDK loads (``ztAPI``, ``ztAPIs``, ``id.cert/key/ca``)."""
    path = Path(path)
    payload = identity.identity_file()
    payload["id"] = {name: "pem:" + value for name, value in payload["id"].items()}
    path.write_text(json.dumps(payload, indent=2))
    path.chmod(0o600)
    return path


def cert_client(target, identity: EnrolledIdentity, *, url: str | None = None) -> ZitiClient:
    """A client presenting ``identity``'s certificate: in-process to an app, or over TLS to ``url``."""
    cert_key = identity.cert_key()
    if url is None:
        return ZitiClient.in_process(target, peer_certs=[cert_key.cert, *cert_key.chain])
    folder = Path(tempfile.mkdtemp(prefix="ziti-cert-"))
    chain_file, key_file = cert_key.write(folder)
    ca_file = folder / "ca.pem"
    ca_file.write_text(identity.ca_pem)
    return ZitiClient.connect(url, ca=str(ca_file), cert=(str(chain_file), str(key_file)))


# -- logins -----------------------------------------------------------------


def login_password(
    client: ZitiClient, username: str, password: str, *, oidc: str | None = None, totp=None, **body
) -> dict:
    """Password login on the client API; the client keeps the session.

    ``oidc="c"`` or ``"go"`` logs in by OIDC with that SDK's requests instead of
    ``/authenticate``; ``totp`` answers a TOTP step either way.
    """
    return client.login(username, password, api="client", oidc=oidc, totp=totp, **body)


def login_cert(client: ZitiClient, *, oidc: str | None = None, totp=None, **body) -> dict:
    """Certificate login (the client must present a certificate); ``oidc`` as in :func:`login_password`."""
    return client.login_cert(oidc=oidc, totp=totp, **body)


def login_ext_jwt(client: ZitiClient, token: str, **body) -> dict:
    """Login with an external JWT in ``Authorization: Bearer``."""
    data = client.edge.call(
        "authenticate", method="ext-jwt", body=body or {}, headers={"Authorization": f"Bearer {token}"}
    )
    client.token = data["token"]
    return data


# -- TOTP ---------------------------------------------------------------------


class ControllerTotp(pyotp.TOTP):
    """pyotp's TOTP, accepting the controller's 80-bit secrets (pyotp asks for 112 bits by default)."""

    min_secret_length_bits = 80


@dataclass
class TotpDevice:
    """An authenticator app: RFC 6238, SHA-1, 6 digits, 30-second steps (pyotp, not the controller's code)."""

    secret: str
    recovery_codes: list[str]

    def code(self, at: datetime | float | None = None) -> str:
        """The code shown at ``at`` (a datetime or epoch seconds; now by default)."""
        moment = (
            at if isinstance(at, datetime) else datetime.fromtimestamp(time.time() if at is None else at, timezone.utc)
        )
        # pyotp, independent of controller/auth/totp.py, so a TOTP bug there cannot agree with itself
        return ControllerTotp(self.secret).at(moment)


def enroll_totp(client: ZitiClient, at: datetime | None = None) -> TotpDevice:
    """Start TOTP enrollment, read the provisioning URL, verify with a code; return the device."""
    client.edge.call("enrollMfa")
    detail = client.edge.call("detailMfa")
    secret = parse_qs(urlsplit(detail["provisioningUrl"]).query)["secret"][0]
    device = TotpDevice(secret, list(detail.get("recoveryCodes") or []))
    client.edge.call("verifyMfa", body={"code": device.code(at)})
    return device


def complete_mfa(client: ZitiClient, device: TotpDevice, at: datetime | None = None) -> None:
    """Answer the session's TOTP query."""
    client.edge.call("authenticateMfa", body={"code": device.code(at)})


# -- using services -------------------------------------------------------------


def dial(client: ZitiClient, service: str, type: str = "Dial") -> dict:
    """Create (or reuse) a session for a service given by name (or by id)."""
    found = client.edge.call("listServices", filter=f'name = "{service}"')
    service_id = found[0]["id"] if found else service
    return client.edge.call("createSession", body={"serviceId": service_id, "type": type})


def submit_posture(client: ZitiClient, *responses: dict) -> dict:
    """Submit posture responses (``{id, typeId, ...}``) in one bulk call."""
    return client.edge.call("createPostureResponseBulk", body=list(responses))


def extend_certificate(client: ZitiClient, identity: EnrolledIdentity) -> EnrolledIdentity:
    """Extend the certificate ``client`` presents, then verify the new one; return the new identity."""
    auth = next(a for a in client.edge.call("listCurrentIdentityAuthenticators") if a["method"] == "cert")
    csr, key = hp.make_csr("extended", o="OpenZiti")
    data = client.edge.call("extendCurrentIdentityAuthenticator", auth["id"], body={"clientCertCsr": hp.csr_pem(csr)})
    leaf = data["clientCert"].split("-----END CERTIFICATE-----")[0] + "-----END CERTIFICATE-----\n"
    client.edge.call("extendVerifyCurrentIdentityAuthenticator", auth["id"], body={"clientCert": leaf})
    return EnrolledIdentity(identity.api_url, data["clientCert"], hp.key_pem(key), data.get("ca") or identity.ca_pem)
