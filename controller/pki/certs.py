"""Certificate helpers: PEM in/out, fingerprints and chain verification.

``verify_chain`` is a small path builder of our own rather than
``cryptography.x509.verification`` because the controller must ignore the
leaf's dates on login (``allowExpiredCerts`` is applied separately) and must
choose whether EKU clientAuth is required; the library verifier offers neither.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from datetime import datetime
from typing import Iterable, Sequence

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID

from controller import errors
from controller.clock import utc
from controller.errors import BadRequest

MAX_CHAIN_DEPTH = 8
MAX_SIGNATURE_CHECKS = 64


def der(cert: x509.Certificate) -> bytes:
    """The DER encoding of ``cert`` (remembered per object: a chain check asks ~10 times)."""
    known = _DERS.get(id(cert))
    if known is not None and known[0] is cert:
        return known[1]
    data = cert.public_bytes(serialization.Encoding.DER)
    if len(_DERS) >= _KEPT:
        _DERS.clear()
    # The entry holds the object, so its id cannot be reused by another while remembered.
    _DERS[id(cert)] = (cert, data)
    return data


_DERS: dict[int, tuple[x509.Certificate, bytes]] = {}
_KEPT = 1024


def fingerprint(cert: x509.Certificate) -> str:
    """Lowercase hex SHA-1 of the DER, no separators (the controller's format)."""
    return hashlib.sha1(der(cert)).hexdigest()


def cert_pem(cert: x509.Certificate) -> str:
    """One certificate as PEM text."""
    return cert.public_bytes(serialization.Encoding.PEM).decode("ascii")


def certs_pem(certs: Iterable[x509.Certificate]) -> str:
    """Several certificates as concatenated PEM text."""
    return "".join(cert_pem(cert) for cert in certs)


def pem_blocks(text: str | bytes) -> list[tuple[str, bytes]]:
    """Return ``(type, der)`` for every PEM block; text between blocks is ignored.

    Raises BadRequest ``COULD_NOT_PARSE_PEM_BLOCK`` when there is no complete
    block and ``COULD_NOT_PARSE_DER_BLOCK`` when a body is not base64.
    """
    # APPSEC(linear-pem): a line scanner, not a backtracking regex, so a 1 MiB
    # body of unterminated BEGIN lines costs linear time.
    blocks, kind, body = [], None, []
    for line in _as_text(text).splitlines():
        line = line.strip()
        if kind is None:
            if line.startswith("-----BEGIN ") and line.endswith("-----") and len(line) > 16:
                kind, body = line[11:-5], []
        elif line == f"-----END {kind}-----":
            blocks.append((kind, _b64(body)))
            kind = None
        else:
            body.append(line)
    if not blocks:
        raise BadRequest(errors.COULD_NOT_PARSE_PEM_BLOCK, "no PEM block found")
    return blocks


def _b64(lines: list[str]) -> bytes:
    try:
        return base64.b64decode("".join(lines), validate=True)
    except (binascii.Error, ValueError) as ex:
        raise BadRequest(errors.COULD_NOT_PARSE_DER_BLOCK, f"PEM block is not valid base64: {ex}") from ex


def load_pem_chain(text: str | bytes) -> list[x509.Certificate]:
    """Parse every ``CERTIFICATE`` block, in order.

    Codes: ``INVALID_CERT_PEM`` (not text), ``COULD_NOT_PARSE_PEM_BLOCK`` (no
    block), ``EXPECTED_PEM_CERTIFICATE`` (another block type),
    ``COULD_NOT_PARSE_DER_BLOCK`` (bad base64 or DER).
    """
    certs = []
    for kind, body in pem_blocks(text):
        if kind != "CERTIFICATE":
            raise BadRequest(errors.EXPECTED_PEM_CERTIFICATE, f"expected a CERTIFICATE PEM block, got {kind}")
        certs.append(load_der_cert(body))
    return certs


def load_pem_cert(text: str | bytes) -> x509.Certificate:
    """The first certificate of a PEM text."""
    return load_pem_chain(text)[0]


def load_der_cert(data: bytes) -> x509.Certificate:
    """Parse DER, raising BadRequest ``COULD_NOT_PARSE_DER_BLOCK``."""
    try:
        return x509.load_der_x509_certificate(data)
    except ValueError as ex:
        raise BadRequest(errors.COULD_NOT_PARSE_DER_BLOCK, f"could not parse certificate DER: {ex}") from ex


def ascii_text(data) -> str | None:
    """PEM input as text: a str as is, bytes decoded as ASCII; None when it is neither."""
    if isinstance(data, str):
        return data
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            return bytes(data).decode("ascii")
        except UnicodeDecodeError:
            return None
    return None


def _as_text(data: str | bytes) -> str:
    text = ascii_text(data)
    if text is None:
        raise BadRequest(errors.INVALID_CERT_PEM, "PEM text (ASCII) expected")
    return text


def basic_constraints(cert: x509.Certificate) -> x509.BasicConstraints | None:
    try:
        return cert.extensions.get_extension_for_class(x509.BasicConstraints).value
    except x509.ExtensionNotFound:
        return None


def is_ca(cert: x509.Certificate) -> bool:
    """True when basicConstraints says CA."""
    constraints = basic_constraints(cert)
    return bool(constraints and constraints.ca)


def is_expired(cert: x509.Certificate, now: datetime) -> bool:
    """True when ``now`` is outside the certificate's validity window."""
    now = utc(now)
    return now < cert.not_valid_before_utc or now > cert.not_valid_after_utc


def has_client_auth(cert: x509.Certificate) -> bool:
    """EKU allows clientAuth (no EKU extension means any usage, as in Go)."""
    try:
        usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        return True
    return ExtendedKeyUsageOID.CLIENT_AUTH in usages or ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE in usages


def is_issued_by(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    """Issuer name matches and ``issuer``'s key verifies the signature (RSA, EC, EdDSA).

    A signature check is a pure function of the two certificates' bytes, so its
    answer is remembered by their DER (a login verifies the same chain again and
    again: an EC check costs ~140 us, the lookup ~10 us). APPSEC(cert): only this
    check is remembered; dates, constraints and key usages are judged every time.
    """
    key = (der(cert), der(issuer))
    known = _SIGNATURES.get(key)
    if known is None:
        known = _verify_signature(cert, issuer)
        if len(_SIGNATURES) >= _KEPT:
            _SIGNATURES.clear()  # bounded: a client sending ever new chains only costs the checks
        _SIGNATURES[key] = known
    return known


_SIGNATURES: dict[tuple[bytes, bytes], bool] = {}


def _verify_signature(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(issuer)
        return True
    except (ValueError, TypeError, InvalidSignature, UnsupportedAlgorithm):
        return False


def _can_issue(issuer: x509.Certificate, depth_below: int, now: datetime) -> bool:
    """An issuer must be a CA, allowed to sign certs, in date and within pathLen."""
    constraints = basic_constraints(issuer)
    if not constraints or not constraints.ca:
        return False
    if constraints.path_length is not None and depth_below > constraints.path_length:
        return False
    try:
        usage = issuer.extensions.get_extension_for_class(x509.KeyUsage).value
        if not usage.key_cert_sign:
            return False
    except x509.ExtensionNotFound:
        pass
    return not is_expired(issuer, now)


def verify_chain(
    leaf: x509.Certificate,
    intermediates: Sequence[x509.Certificate],
    roots: Sequence[x509.Certificate],
    *,
    now: datetime,
    check_leaf_dates: bool,
    require_client_auth: bool,
) -> list[x509.Certificate] | None:
    """Build ``[leaf, intermediates..., root]`` or return None.

    Intermediates may come in any order. Every issuer must be a CA in date;
    the leaf's dates are checked only when asked.
    """
    now = utc(now)
    if check_leaf_dates and is_expired(leaf, now):
        return None
    if require_client_auth and not has_client_auth(leaf):
        return None
    root_ders = {der(root) for root in roots}
    if der(leaf) in root_ders:
        # Go's Verify returns [leaf] when the leaf itself is a trusted root.
        return [leaf]
    builder = _PathBuilder(list(intermediates), list(roots), now, require_client_auth)
    return builder.extend([leaf])


class _PathBuilder:
    """Depth-first search for an issuer of the path's last cert, roots first."""

    def __init__(self, intermediates, roots, now, client_auth):
        self.roots = roots
        self.root_ders = {der(root) for root in roots}
        self.intermediates = [c for c in intermediates if der(c) not in self.root_ders]
        self.now = now
        self.client_auth = client_auth
        # APPSEC(chain-dos): intermediates come from the client; a budget of
        # signature checks keeps crafted same-name sets from exploding the search.
        self.budget = MAX_SIGNATURE_CHECKS

    def _issues(self, issuer, cert, depth_below) -> bool:
        if issuer.subject != cert.issuer or self.budget <= 0:
            return False
        self.budget -= 1
        return is_issued_by(cert, issuer) and _can_issue(issuer, depth_below, self.now)

    def extend(self, path):
        if len(path) > MAX_CHAIN_DEPTH:
            return None
        current = path[-1]
        depth_below = len(path) - 1  # CAs already between the next issuer and the leaf
        for root in self.roots:
            if self._issues(root, current, depth_below):
                return path + [root]
        seen = {der(cert) for cert in path}
        for candidate in self.intermediates:
            if der(candidate) in seen or not self._issues(candidate, current, depth_below):
                continue
            if self.client_auth and not has_client_auth(candidate):
                continue  # Go also requires intermediates' EKU to allow the usage
            found = self.extend(path + [candidate])
            if found:
                return found
        return None
