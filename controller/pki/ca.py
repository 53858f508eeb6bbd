"""The controller's own PKI: root CA, signing intermediate, TLS server cert.

Issuance follows the real controller (identity, API-session and router certs
signed by the intermediate; chains returned as leaf + intermediate, no root).
"""

from __future__ import annotations

import base64
import hashlib
import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import Iterable, Sequence

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.serialization import pkcs7
from cryptography.x509.oid import NameOID

from controller.clock import Clock
from controller.pki import files, issue
from controller.pki.certs import certs_pem, der, fingerprint, verify_chain
from controller.pki.csr import csr_sans, parse_csr
from controller.private_files import make_folder

ROOT_DAYS = 3650
INTERMEDIATE_DAYS = 3650
SERVER_DAYS = 730
SERVER_RENEW_BEFORE = timedelta(days=30)
API_SESSION_CERT_LIFETIME = timedelta(hours=12)

FILES = {
    "root_cert": "root-ca.cert.pem",
    "root_key": "root-ca.key.pem",
    "intermediate_cert": "intermediate-ca.cert.pem",
    "intermediate_key": "intermediate-ca.key.pem",
    "server_cert": "server.cert.pem",
    "server_key": "server.key.pem",
}
CA_FILES = ("root_cert", "root_key", "intermediate_cert", "intermediate_key")


class PKIError(RuntimeError):
    """The PKI folder is incomplete or inconsistent; refuse to guess."""


def _normalise_trust_domain(value: str) -> str:
    value = value.strip().rstrip("/")
    return value if value.startswith("spiffe://") else f"spiffe://{value}"


def _jwt_alg(key) -> str:
    if isinstance(key, rsa.RSAPrivateKey):
        return "RS256"
    if isinstance(key, ec.EllipticCurvePrivateKey):
        return {256: "ES256", 384: "ES384", 521: "ES512"}[key.curve.key_size]
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return "EdDSA"
    raise TypeError(f"no JWT algorithm for {type(key).__name__}")


def _ensure_csr(csr) -> x509.CertificateSigningRequest:
    if isinstance(csr, x509.CertificateSigningRequest):
        return csr
    return parse_csr(csr)


class ControllerPKI:
    """Keys and certificates of one controller, loaded from or created in ``folder``."""

    def __init__(
        self,
        folder: Path,
        root: issue.Issuer,
        intermediate: issue.Issuer,
        server_cert: x509.Certificate,
        server_key,
        *,
        clock: Clock,
        trust_domain: str | None = None,
    ):
        self.folder = Path(folder)
        self.root = root
        self.intermediate = intermediate
        self.server_cert = server_cert
        self.server_key = server_key
        self.clock = clock
        self._trust_domain = _normalise_trust_domain(trust_domain) if trust_domain else None

    # ----------------------------------------------------------------- loading
    @classmethod
    def load_or_create(
        cls,
        folder,
        *,
        hostnames: Iterable[str] = ("localhost",),
        ip_addresses: Iterable[str] = ("127.0.0.1",),
        clock: Clock | None = None,
        trust_domain: str | None = None,
        server_key_type: str | None = None,
    ) -> "ControllerPKI":
        """Load the PKI in ``folder``, creating what is missing.

        The server cert is regenerated when its names differ from the configured
        ones (always including localhost and 127.0.0.1), when it no longer chains
        to the intermediate, or when it is within 30 days of expiry. Its key is
        kept unless ``server_key_type`` names another type (None: keep, or RSA when new).
        """
        issue.check_server_key_type(server_key_type)
        clock = clock or Clock()
        folder = make_folder(folder)
        sans = issue.server_sans(["localhost", *hostnames], ["127.0.0.1", *ip_addresses])
        with files.locked(folder):
            now = clock.now()
            root, intermediate = _load_or_create_cas(folder, now)
            server_cert, server_key = _load_or_create_server(folder, intermediate, sans, now, server_key_type)
        return cls(folder, root, intermediate, server_cert, server_key, clock=clock, trust_domain=trust_domain)

    # -------------------------------------------------------------- accessors
    @property
    def root_cert(self) -> x509.Certificate:
        return self.root.cert

    @property
    def root_key(self):
        return self.root.key

    @property
    def intermediate_cert(self) -> x509.Certificate:
        return self.intermediate.cert

    @property
    def ca_certs(self) -> list[x509.Certificate]:
        """Every controller CA certificate, root first."""
        return [self.root.cert, self.intermediate.cert]

    def chain_pem(self, leaf: x509.Certificate) -> str:
        """``leaf`` + intermediate as PEM (what the controller returns; no root)."""
        return certs_pem([leaf, self.intermediate.cert])

    def server_chain_pem(self) -> str:
        return self.chain_pem(self.server_cert)

    def ca_bundle_pem(self) -> str:
        """The CA bundle: every controller CA cert as PEM."""
        return certs_pem(self.ca_certs)

    def cacerts_pkcs7_b64(self) -> str:
        """Base64 of a certs-only PKCS#7 of the CA certs, 64-char lines, no final newline."""
        blob = base64.b64encode(pkcs7.serialize_certificates(self.ca_certs, serialization.Encoding.DER)).decode("ascii")
        # The C SDK's parser crashes on one long line.
        return "\n".join(blob[i : i + 64] for i in range(0, len(blob), 64))

    @property
    def trust_domain(self) -> str:
        """Configured, else a SPIFFE URI in the controller certs, else ``spiffe://<sha1 of root DER>``."""
        if self._trust_domain:
            return self._trust_domain
        for cert in (self.server_cert, self.intermediate.cert, self.root.cert):
            found = _spiffe_trust_domain(cert)
            if found:
                return found
        return f"spiffe://{hashlib.sha1(der(self.root.cert)).hexdigest()}"

    def jwt_signing_key(self) -> tuple[object, str, str]:
        """``(private key, alg, kid)``: enrollment JWTs are signed by the TLS server cert's key."""
        return self.server_key, _jwt_alg(self.server_key), fingerprint(self.server_cert)

    def identity_spiffe_id(self, identity_id: str) -> str:
        return f"{self.trust_domain}/identity/{identity_id}"

    # ---------------------------------------------------------------- issuing
    def _one_year(self) -> tuple[datetime, datetime]:
        now = self.clock.now()
        return now - issue.BACKDATE, issue.add_year(now)

    def _sign(self, csr, subject, sans, eku, window) -> x509.Certificate:
        not_before, not_after = window
        return issue.build_leaf(
            self.intermediate, csr.public_key(), subject, not_before=not_before, not_after=not_after, eku=eku, sans=sans
        )

    def sign_identity_csr(self, csr, identity_id: str) -> x509.Certificate:
        """Identity cert: CSR subject, only the SPIFFE identity SAN (CSR SANs dropped)."""
        csr = _ensure_csr(csr)
        sans = x509.SubjectAlternativeName([x509.UniformResourceIdentifier(self.identity_spiffe_id(identity_id))])
        return self._sign(csr, csr.subject, sans, issue.CLIENT_AUTH, self._one_year())

    def extend_identity_cert(self, csr, current_cert: x509.Certificate) -> x509.Certificate:
        """Extension: subject from the new CSR, SANs copied from the current cert."""
        csr = _ensure_csr(csr)
        try:
            sans = current_cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        except x509.ExtensionNotFound:
            sans = None
        return self._sign(csr, csr.subject, sans, issue.CLIENT_AUTH, self._one_year())

    def sign_api_session_csr(
        self, csr, identity_id: str, api_session_id: str, cert_id: str, *, lifetime: timedelta | None = None
    ) -> x509.Certificate:
        """API-session cert: now … +12 h (or ``lifetime``: an OIDC session's is a year), ``CN=<identity id>`` forced."""
        csr = _ensure_csr(csr)
        now = self.clock.now()
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, identity_id)])
        uri = f"{self.identity_spiffe_id(identity_id)}/apiSession/{api_session_id}/apiSessionCertificate/{cert_id}"
        sans = x509.SubjectAlternativeName([x509.UniformResourceIdentifier(uri)])
        return self._sign(csr, subject, sans, issue.CLIENT_AUTH, (now, now + (lifetime or API_SESSION_CERT_LIFETIME)))

    def sign_router_csrs(self, client_csr, server_csr) -> tuple[x509.Certificate, x509.Certificate]:
        """Router client (clientAuth) and server (serverAuth) certs; subject and SANs from each CSR."""
        client_csr, server_csr = _ensure_csr(client_csr), _ensure_csr(server_csr)
        window = self._one_year()
        client = self._sign(client_csr, client_csr.subject, csr_sans(client_csr), issue.CLIENT_AUTH, window)
        server = self._sign(server_csr, server_csr.subject, csr_sans(server_csr), issue.SERVER_AUTH, window)
        return client, server

    # ------------------------------------------------------------ verification
    def verify_peer_chain(
        self, peer_certs: Sequence[x509.Certificate], *, now: datetime | None = None, require_client_auth: bool = False
    ) -> tuple[list[x509.Certificate] | None, bool]:
        """Chain TLS peer certs (leaf first) to the controller root; leaf dates ignored.

        Returns ``(chain, improper)``: ``improper`` is True when the chain only
        verifies with the controller intermediate added (the client did not send it).
        """
        if not peer_certs:
            return None, False
        now = now or self.clock.now()
        leaf, sent = peer_certs[0], list(peer_certs[1:])
        for extra, improper in (([], False), ([self.intermediate.cert], True)):
            chain = verify_chain(
                leaf,
                sent + extra,
                [self.root.cert],
                now=now,
                check_leaf_dates=False,
                require_client_auth=require_client_auth,
            )
            if chain:
                return chain, improper
        return None, False


def _spiffe_trust_domain(cert: x509.Certificate) -> str | None:
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return None
    for uri in sans.get_values_for_type(x509.UniformResourceIdentifier):
        if uri.lower().startswith("spiffe://"):
            host = uri[len("spiffe://") :].split("/", 1)[0]
            if host:
                return f"spiffe://{host}"
    return None


def _paths(folder: Path) -> dict[str, Path]:
    return {name: folder / filename for name, filename in FILES.items()}


def _load_or_create_cas(folder: Path, now: datetime) -> tuple[issue.Issuer, issue.Issuer]:
    paths = _paths(folder)
    present = [name for name in CA_FILES if paths[name].exists()]
    if not present:
        return _create_cas(paths, now)
    if len(present) != len(CA_FILES):
        missing = sorted(set(CA_FILES) - set(present))
        # APPSEC(no-silent-ca-rotation): a new CA would orphan every issued cert.
        raise PKIError(f"incomplete PKI in {folder}: missing {', '.join(FILES[m] for m in missing)}")
    root = issue.Issuer(files.read_cert(paths["root_cert"]), files.read_key(paths["root_key"]))
    inter = issue.Issuer(files.read_cert(paths["intermediate_cert"]), files.read_key(paths["intermediate_key"]))
    for label, pair in (("root", root), ("intermediate", inter)):
        if not files.key_matches(pair.cert, pair.key):
            raise PKIError(f"{label} CA key does not match its certificate in {folder}")
    if not verify_chain(inter.cert, [], [root.cert], now=now, check_leaf_dates=True, require_client_auth=False):
        raise PKIError(f"intermediate CA is not a valid child of the root CA in {folder}")
    return root, inter


def _create_cas(paths: dict[str, Path], now: datetime) -> tuple[issue.Issuer, issue.Issuer]:
    root_key, inter_key = issue.new_ec_key(), issue.new_ec_key()
    suffix = os.urandom(4).hex()
    root = issue.Issuer(
        issue.build_root(root_key, f"Ziti Controller Root CA {suffix}", now=now, days=ROOT_DAYS), root_key
    )
    inter_cert = issue.build_intermediate(
        root, inter_key, f"Ziti Controller Signing CA {suffix}", now=now, days=INTERMEDIATE_DAYS
    )
    inter = issue.Issuer(inter_cert, inter_key)
    # Keys first: a crash leaves no cert without its key.
    files.write_key(paths["root_key"], root_key)
    files.write_key(paths["intermediate_key"], inter_key)
    files.write_cert(paths["root_cert"], root.cert)
    files.write_cert(paths["intermediate_cert"], inter.cert)
    return root, inter


def _server_reusable(cert, key, intermediate: issue.Issuer, sans, now: datetime) -> bool:
    try:
        current = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    return (
        files.key_matches(cert, key)
        and issue.san_set(current) == issue.san_set(sans)
        and verify_chain(cert, [], [intermediate.cert], now=now, check_leaf_dates=True, require_client_auth=False)
        is not None
        and cert.not_valid_after_utc - now > SERVER_RENEW_BEFORE
    )


def _load_or_create_server(folder: Path, intermediate: issue.Issuer, sans, now: datetime, key_type: str | None):
    paths = _paths(folder)
    cert_path, key_path = paths["server_cert"], paths["server_key"]
    key = files.read_key(key_path) if key_path.exists() else None
    if key is not None and key_type is not None and issue.server_key_type_of(key) != key_type:
        key = None  # an explicit other type replaces the key (and so the cert)
    if key is not None and cert_path.exists():
        cert = files.read_cert(cert_path)
        if _server_reusable(cert, key, intermediate, sans, now):
            return cert, key
    if key is None:
        key = issue.new_server_key(key_type)
        files.write_key(key_path, key)
    cert = issue.build_server(intermediate, key, sans, now=now, days=SERVER_DAYS)
    files.write_cert(cert_path, cert)
    return cert, key
