"""CSR parsing with the real controller's strictness."""

from __future__ import annotations

import base64
import binascii
import re

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa

from controller import errors
from controller.errors import BadRequest
from controller.pki.certs import ascii_text

CODE = errors.COULD_NOT_PROCESS_CSR
MIN_RSA_BITS = 2048
_CSR_TYPES = ("CERTIFICATE REQUEST", "NEW CERTIFICATE REQUEST")

# One block; leading whitespace only; after the END line at most one line break
# (Go's pem.Decode consumes it and the controller rejects any remainder).
_ONE_BLOCK = re.compile(r"\A\s*-----BEGIN ([A-Z ]+)-----\r?\n([A-Za-z0-9+/=\s]*?)-----END \1-----[ \t]*(?:\r?\n)?\Z")


def _fail(detail: str, ex: Exception | None = None) -> BadRequest:
    error = BadRequest(CODE, f"could not process CSR: {detail}")
    if ex is not None:
        error.__cause__ = ex
    return error


def _text(data: bytes | str) -> str:
    text = ascii_text(data)
    if text is None:
        raise _fail("PEM text (ASCII) expected")
    return text


def _check_key(csr: x509.CertificateSigningRequest) -> None:
    """APPSEC(csr-key): refuse keys we would not trust a client to hold (tiny RSA, odd types)."""
    try:
        key = csr.public_key()
    except ValueError as ex:
        raise _fail("unsupported public key", ex) from ex
    if isinstance(key, rsa.RSAPublicKey):
        if key.key_size < MIN_RSA_BITS:
            raise _fail(f"RSA key smaller than {MIN_RSA_BITS} bits")
        return
    if isinstance(key, (ec.EllipticCurvePublicKey, ed25519.Ed25519PublicKey, ed448.Ed448PublicKey)):
        return
    raise _fail(f"unsupported public key type {type(key).__name__}")


#: ecdsa-with-SHA256/384/512 AlgorithmIdentifiers as mbedTLS writes them, with a NULL parameter
_ECDSA_WITH_NULL = {
    bytes.fromhex(f"300c06082a8648ce3d0403{n:02x}0500"): bytes.fromhex(f"300a06082a8648ce3d0403{n:02x}")
    for n in (2, 3, 4)
}


def _tlv(data: bytes, offset: int) -> tuple[int, int]:
    """(start of the value, end of the element) of the DER element at ``offset``."""
    length, start = data[offset + 1], offset + 2
    if length & 0x80:
        count = length & 0x7F
        length, start = int.from_bytes(data[start : start + count], "big"), start + count
    return start, start + length


def _without_ecdsa_null(der: bytes) -> bytes:
    """The CSR with a NULL-parameter ECDSA signature algorithm rewritten without it.

    libziti 0.29 (mbedTLS) sends ``{ecdsa-with-SHA256, NULL}``; Go accepts it, the
    ``cryptography`` parser does not. The signature covers only the request info,
    so dropping the NULL changes nothing that is signed.
    """
    try:
        body, end = _tlv(der, 0)
        _, info_end = _tlv(der, body)
        _, alg_end = _tlv(der, info_end)
    except IndexError:
        return der
    replacement = _ECDSA_WITH_NULL.get(der[info_end:alg_end])
    if der[0] != 0x30 or end != len(der) or replacement is None:
        return der
    inner = der[body:info_end] + replacement + der[alg_end:]
    return b"\x30" + _der_length(len(inner)) + inner


def _der_length(length: int) -> bytes:
    if length < 0x80:
        return bytes([length])
    raw = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(raw)]) + raw


def parse_csr(data: bytes | str) -> x509.CertificateSigningRequest:
    """Parse exactly one PEM CSR whose self-signature verifies.

    Anything else raises ``BadRequest(errors.COULD_NOT_PROCESS_CSR)``.
    """
    match = _ONE_BLOCK.match(_text(data))
    if not match:
        raise _fail("expected exactly one PEM block followed by at most one line break")
    if match.group(1) not in _CSR_TYPES:
        raise _fail(f"expected a CERTIFICATE REQUEST PEM block, got {match.group(1)}")
    try:
        body = base64.b64decode(re.sub(r"\s+", "", match.group(2)), validate=True)
        csr = x509.load_der_x509_csr(_without_ecdsa_null(body))
    except (binascii.Error, ValueError) as ex:
        raise _fail("malformed CSR", ex) from ex
    _check_key(csr)
    try:
        valid = csr.is_signature_valid
        _ = csr.extensions  # parse now so malformed extensions fail here, not at signing
    except (ValueError, TypeError, UnsupportedAlgorithm) as ex:
        raise _fail("unverifiable signature or malformed extensions", ex) from ex
    if not valid:
        raise _fail("signature does not verify")
    return csr


def csr_sans(csr: x509.CertificateSigningRequest) -> x509.SubjectAlternativeName | None:
    """The SAN extension requested by the CSR, if any."""
    try:
        return csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return None
    except ValueError as ex:
        raise _fail("malformed extensions", ex) from ex
