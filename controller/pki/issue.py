"""Certificate builders: CAs, the TLS server cert and leaves issued from CSRs."""

from __future__ import annotations

import ipaddress
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Iterable

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SERIAL_LIMIT = 2**159  # serials are random, positive and below 2^159 (fit in 20 octets)
BACKDATE = timedelta(minutes=1)

CLIENT_AUTH = ExtendedKeyUsageOID.CLIENT_AUTH
SERVER_AUTH = ExtendedKeyUsageOID.SERVER_AUTH

LEAF_USAGE = x509.KeyUsage(
    digital_signature=True,
    content_commitment=False,
    key_encipherment=True,
    data_encipherment=True,
    key_agreement=False,
    key_cert_sign=False,
    crl_sign=False,
    encipher_only=False,
    decipher_only=False,
)
CA_USAGE = x509.KeyUsage(
    digital_signature=True,
    content_commitment=False,
    key_encipherment=False,
    data_encipherment=False,
    key_agreement=False,
    key_cert_sign=True,
    crl_sign=True,
    encipher_only=False,
    decipher_only=False,
)
SERVER_USAGE = x509.KeyUsage(
    digital_signature=True,
    content_commitment=False,
    key_encipherment=True,
    data_encipherment=False,
    key_agreement=False,
    key_cert_sign=False,
    crl_sign=False,
    encipher_only=False,
    decipher_only=False,
)


@dataclass(frozen=True)
class Issuer:
    """A CA certificate with its private key."""

    cert: x509.Certificate
    key: object


def random_serial() -> int:
    """A random serial in ``[1, 2^159)``."""
    return secrets.randbelow(SERIAL_LIMIT - 1) + 1


def add_year(when: datetime) -> datetime:
    """One calendar year later; 29 February rolls to 1 March (Go's AddDate)."""
    try:
        return when.replace(year=when.year + 1)
    except ValueError:
        return when.replace(year=when.year + 1, month=3, day=1)


def new_ec_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


#: TLS server key types; the real quickstart's ``ziti pki create server`` makes RSA keys
SERVER_KEY_TYPES = ("rsa", "ec")
DEFAULT_SERVER_KEY_TYPE = "rsa"
#: NOTE(harden): the quickstart uses 4096 bits; 2048 verifies the same in every SDK and generates ~15x faster.
RSA_BITS = 2048


def check_server_key_type(key_type: str | None) -> None:
    if key_type is not None and key_type not in SERVER_KEY_TYPES:
        raise ValueError(f"unknown server key type {key_type!r}: use one of {', '.join(SERVER_KEY_TYPES)}")


def new_server_key(key_type: str | None):
    """A new TLS server key: RSA (RS256 enrollment JWTs) unless ``ec`` (P-256, ES256)."""
    check_server_key_type(key_type)
    if (key_type or DEFAULT_SERVER_KEY_TYPE) == "ec":
        return new_ec_key()
    return rsa.generate_private_key(public_exponent=65537, key_size=RSA_BITS)


def server_key_type_of(key) -> str:
    return "rsa" if isinstance(key, rsa.RSAPrivateKey) else "ec"


def signature_hash(key) -> hashes.HashAlgorithm | None:
    """The digest Go would pair with this signing key (None for EdDSA)."""
    if isinstance(key, (ed25519.Ed25519PrivateKey, ed448.Ed448PrivateKey)):
        return None
    if isinstance(key, ec.EllipticCurvePrivateKey):
        return {384: hashes.SHA384(), 521: hashes.SHA512()}.get(key.curve.key_size, hashes.SHA256())
    if isinstance(key, rsa.RSAPrivateKey):
        return hashes.SHA256()
    raise TypeError(f"unsupported signing key {type(key).__name__}")


def _aki(issuer_cert: x509.Certificate) -> x509.AuthorityKeyIdentifier:
    try:
        ski = issuer_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
        return x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski)
    except x509.ExtensionNotFound:
        return x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_cert.public_key())


def _base(subject: x509.Name, issuer_name: x509.Name, public_key, not_before, not_after) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_name)
        .public_key(public_key)
        .serial_number(random_serial())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
    )


def build_leaf(
    issuer: Issuer,
    public_key,
    subject: x509.Name,
    *,
    not_before: datetime,
    not_after: datetime,
    eku: x509.ObjectIdentifier,
    sans: x509.SubjectAlternativeName | None,
    usage: x509.KeyUsage = LEAF_USAGE,
) -> x509.Certificate:
    """An end-entity cert: key usage, one EKU, optional SANs, no basicConstraints."""
    builder = (
        _base(subject, issuer.cert.subject, public_key, not_before, not_after)
        .add_extension(usage, critical=True)
        .add_extension(x509.ExtendedKeyUsage([eku]), critical=False)
        .add_extension(_aki(issuer.cert), critical=False)
    )
    if sans is not None and len(sans) > 0:
        # RFC 5280: SANs must be critical when the subject is empty.
        builder = builder.add_extension(sans, critical=len(subject) == 0)
    return builder.sign(issuer.key, signature_hash(issuer.key))


def build_root(key, common_name: str, *, now: datetime, days: int) -> x509.Certificate:
    """A self-signed root CA."""
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "OpenZiti Python Controller"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )
    builder = (
        _base(name, name, key.public_key(), now - timedelta(hours=1), now + timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(CA_USAGE, critical=True)
    )
    return builder.sign(key, signature_hash(key))


def build_intermediate(issuer: Issuer, key, common_name: str, *, now: datetime, days: int) -> x509.Certificate:
    """A signing CA below ``issuer`` that may only sign leaves (pathLen 0)."""
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "OpenZiti Python Controller"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )
    not_after = min(now + timedelta(days=days), issuer.cert.not_valid_after_utc)
    builder = (
        _base(name, issuer.cert.subject, key.public_key(), now - timedelta(hours=1), not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(CA_USAGE, critical=True)
        .add_extension(_aki(issuer.cert), critical=False)
    )
    return builder.sign(issuer.key, signature_hash(issuer.key))


def server_sans(hostnames: Iterable[str], ip_addresses: Iterable[str]) -> x509.SubjectAlternativeName:
    """DNS and IP SANs; a "hostname" that parses as an IP becomes an IP SAN."""
    dns, ips = [], []
    for name in list(hostnames) + list(ip_addresses):
        try:
            ip = ipaddress.ip_address(name.strip("[]"))
            if ip not in ips:
                ips.append(ip)
        except ValueError:
            if name.lower() not in dns:
                dns.append(name.lower())
    return x509.SubjectAlternativeName([x509.DNSName(n) for n in dns] + [x509.IPAddress(ip) for ip in ips])


def san_set(sans: x509.SubjectAlternativeName | None) -> set[str]:
    """Comparable ``kind:value`` strings for a SAN extension value."""
    if sans is None:
        return set()
    return {f"{type(n).__name__}:{str(n.value).lower()}" for n in sans}


def build_server(
    issuer: Issuer, key, sans: x509.SubjectAlternativeName, *, now: datetime, days: int
) -> x509.Certificate:
    """The TLS server certificate (serverAuth) covering ``sans``."""
    first = next(iter(sans), None)
    common_name = str(first.value) if first is not None else "controller"
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "OpenZiti Python Controller"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )
    not_after = min(now + timedelta(days=days), issuer.cert.not_valid_after_utc)
    return build_leaf(
        issuer,
        key.public_key(),
        subject,
        not_before=now - timedelta(hours=1),
        not_after=not_after,
        eku=SERVER_AUTH,
        sans=sans,
        usage=SERVER_USAGE,
    )
