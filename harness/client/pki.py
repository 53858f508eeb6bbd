"""A test PKI independent of ``controller.pki`` (only ``cryptography`` and stdlib).

Tests build third-party CAs, client certs and CSRs here, so the code under
test never vouches for itself.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import secrets
import ssl
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterable, Sequence

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

EKUS = {
    "clientAuth": ExtendedKeyUsageOID.CLIENT_AUTH,
    "serverAuth": ExtendedKeyUsageOID.SERVER_AUTH,
    "any": ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE,
}


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def new_key(key_type: str = "ec"):
    """``ec`` (P-256), ``ec384``, ``rsa`` (2048), ``rsa1024`` (weak, for rejection tests), ``ed25519``."""
    if key_type == "ec":
        return ec.generate_private_key(ec.SECP256R1())
    if key_type == "ec384":
        return ec.generate_private_key(ec.SECP384R1())
    if key_type in ("rsa", "rsa1024"):
        return rsa.generate_private_key(public_exponent=65537, key_size=1024 if key_type == "rsa1024" else 2048)
    if key_type == "ed25519":
        return ed25519.Ed25519PrivateKey.generate()
    raise ValueError(f"unknown key type {key_type!r}")


def _digest(key):
    return None if isinstance(key, ed25519.Ed25519PrivateKey) else hashes.SHA256()


def cert_pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode("ascii")


def pem(*certs: x509.Certificate) -> str:
    """Concatenated PEM of ``certs``."""
    return "".join(cert_pem(c) for c in certs)


def key_pem(key) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode("ascii")


def csr_pem(csr: x509.CertificateSigningRequest) -> str:
    return csr.public_bytes(serialization.Encoding.PEM).decode("ascii")


def sha1_fingerprint(cert: x509.Certificate) -> str:
    """Lowercase hex SHA-1 of the DER, computed independently of the controller."""
    return hashlib.sha1(cert.public_bytes(serialization.Encoding.DER)).hexdigest()


def name(cn: str | None = None, o: str | None = None, dc: str | None = None) -> x509.Name:
    attrs = []
    if o is not None:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o))
    if dc is not None:
        attrs.append(x509.NameAttribute(NameOID.DOMAIN_COMPONENT, dc))
    if cn is not None:
        attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
    return x509.Name(attrs)


@dataclass
class CertKey:
    """A certificate, its key and the intermediates to send after it (root excluded)."""

    cert: x509.Certificate
    key: object
    chain: list[x509.Certificate] = field(default_factory=list)

    @property
    def is_self_signed(self) -> bool:
        return self.cert.issuer == self.cert.subject

    @property
    def fingerprint(self) -> str:
        return sha1_fingerprint(self.cert)

    @property
    def cert_pem(self) -> str:
        return cert_pem(self.cert)

    @property
    def key_pem(self) -> str:
        return key_pem(self.key)

    @property
    def chain_pem(self) -> str:
        """Leaf followed by its intermediates, as a client would present them."""
        return pem(self.cert, *self.chain)

    def write(self, folder: Path | str, stem: str = "client") -> tuple[Path, Path]:
        """Write ``<stem>.chain.pem`` (leaf + intermediates) and ``<stem>.key.pem`` (0600)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        cert_path, key_path = folder / f"{stem}.chain.pem", folder / f"{stem}.key.pem"
        cert_path.write_text(self.chain_pem)
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(self.key_pem)
        return cert_path, key_path


def _window(now, days, not_before, not_after, expired):
    now = now or utcnow()
    if expired:
        return now - timedelta(days=days + 1), now - timedelta(days=1)
    return not_before or now - timedelta(minutes=5), not_after or now + timedelta(days=days)


def _builder(subject, issuer_name, public_key, window):
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_name)
        .public_key(public_key)
        .serial_number(secrets.randbits(150) | 1)
        .not_valid_before(window[0])
        .not_valid_after(window[1])
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
    )


def _ca_extensions(builder, path_length):
    usage = x509.KeyUsage(True, False, False, False, False, True, True, False, False)
    return builder.add_extension(x509.BasicConstraints(ca=True, path_length=path_length), critical=True).add_extension(
        usage, critical=True
    )


def make_root_ca(
    cn: str = "Test Root CA",
    *,
    key_type: str = "ec",
    days: int = 3650,
    now=None,
    not_before=None,
    not_after=None,
    expired: bool = False,
    path_length: int | None = None,
) -> CertKey:
    """A self-signed root CA."""
    key = new_key(key_type)
    subject = name(cn, o="Harness Test PKI")
    builder = _builder(subject, subject, key.public_key(), _window(now, days, not_before, not_after, expired))
    return CertKey(_ca_extensions(builder, path_length).sign(key, _digest(key)), key)


def _issuer_chain(issuer: CertKey) -> list[x509.Certificate]:
    """What a child presents after itself: the issuer (unless a root) and the issuer's chain."""
    return list(issuer.chain) if issuer.is_self_signed else [issuer.cert, *issuer.chain]


def _aki(issuer: CertKey):
    return x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer.cert.public_key())


def make_intermediate_ca(
    issuer: CertKey,
    cn: str = "Test Intermediate CA",
    *,
    key_type: str = "ec",
    days: int = 1825,
    now=None,
    not_before=None,
    not_after=None,
    expired: bool = False,
    path_length: int | None = None,
) -> CertKey:
    """A CA signed by ``issuer``."""
    key = new_key(key_type)
    window = _window(now, days, not_before, not_after, expired)
    builder = _builder(name(cn, o="Harness Test PKI"), issuer.cert.subject, key.public_key(), window)
    builder = _ca_extensions(builder, path_length).add_extension(_aki(issuer), critical=False)
    return CertKey(builder.sign(issuer.key, _digest(issuer.key)), key, _issuer_chain(issuer))


def _sans(dns: Iterable[str], uris: Iterable[str], emails: Iterable[str], ips: Iterable[str]):
    names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
    names += [x509.UniformResourceIdentifier(u) for u in uris]
    names += [x509.RFC822Name(e) for e in emails]
    names += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    return x509.SubjectAlternativeName(names) if names else None


def make_leaf(
    issuer: CertKey | None,
    cn: str | None = "client",
    *,
    key_type: str = "ec",
    key=None,
    days: int = 365,
    now=None,
    not_before=None,
    not_after=None,
    expired: bool = False,
    dns: Sequence[str] = (),
    uris: Sequence[str] = (),
    emails: Sequence[str] = (),
    ips: Sequence[str] = (),
    eku: Sequence[str] | None = ("clientAuth",),
    subject: x509.Name | None = None,
) -> CertKey:
    """An end-entity cert signed by ``issuer`` (self-signed when ``issuer`` is None).

    ``eku=None`` leaves the extension out; names are keys of ``EKUS``.
    """
    key = key or new_key(key_type)
    subject = subject if subject is not None else name(cn)
    signing_key = issuer.key if issuer else key
    issuer_name = issuer.cert.subject if issuer else subject
    window = _window(now, days, not_before, not_after, expired)
    usage = x509.KeyUsage(True, False, True, False, False, False, False, False, False)
    builder = _builder(subject, issuer_name, key.public_key(), window).add_extension(usage, critical=True)
    if issuer:
        builder = builder.add_extension(_aki(issuer), critical=False)
    if eku is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([EKUS.get(e, e) for e in eku]), critical=False)
    sans = _sans(dns, uris, emails, ips)
    if sans is not None:
        builder = builder.add_extension(sans, critical=False)
    cert = builder.sign(signing_key, _digest(signing_key))
    return CertKey(cert, key, _issuer_chain(issuer) if issuer else [])


def make_csr(
    cn: str | None = "client",
    *,
    o: str | None = "OpenZiti",
    dc: str | None = None,
    key=None,
    key_type: str = "ec",
    dns: Sequence[str] = (),
    uris: Sequence[str] = (),
    emails: Sequence[str] = (),
    ips: Sequence[str] = (),
):
    """A CSR like the C SDK's (EC P-256, subject O/DC/CN); returns ``(csr, key)``."""
    key = key or new_key(key_type)
    builder = x509.CertificateSigningRequestBuilder().subject_name(name(cn, o=o, dc=dc))
    sans = _sans(dns, uris, emails, ips)
    if sans is not None:
        builder = builder.add_extension(sans, critical=False)
    return builder.sign(key, _digest(key)), key


def client_ssl_context(ca_pem: str, client: CertKey | None = None) -> ssl.SSLContext:
    """A client context trusting only ``ca_pem`` and optionally presenting ``client``'s chain."""
    ctx = ssl.create_default_context(cadata=ca_pem)
    if client is not None:
        with tempfile.TemporaryDirectory() as tmp:
            cert_path, key_path = client.write(tmp)
            ctx.load_cert_chain(cert_path, key_path)
    return ctx
