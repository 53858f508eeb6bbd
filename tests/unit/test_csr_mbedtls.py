"""CSRs as libziti 0.29 (mbedTLS) writes them: a NULL parameter after ecdsa-with-SHA256."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives import serialization

from controller.errors import BadRequest
from controller.pki.csr import parse_csr
from harness.client import pki as hp

PLAIN = bytes.fromhex("300a06082a8648ce3d040302")
WITH_NULL = bytes.fromhex("300c06082a8648ce3d0403020500")


def mbedtls_style(csr) -> str:
    """The same CSR re-encoded with the NULL parameter (the signature stays valid: it covers the request info)."""
    der = csr.public_bytes(serialization.Encoding.DER)
    assert der.count(PLAIN) == 1
    header = 2 + (der[1] & 0x7F if der[1] & 0x80 else 0)
    inner = der[header:].replace(PLAIN, WITH_NULL)
    return _pem(b"\x30\x82" + len(inner).to_bytes(2, "big") + inner)


def _pem(der: bytes) -> str:
    body = base64.b64encode(der).decode()
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    return f"-----BEGIN CERTIFICATE REQUEST-----\n{lines}\n-----END CERTIFICATE REQUEST-----\n"


def test_an_ecdsa_csr_with_a_null_parameter_is_accepted_with_its_subject():
    csr, _ = hp.make_csr("sdk-device", o="OpenZiti")
    parsed = parse_csr(mbedtls_style(csr))
    assert parsed.subject == csr.subject and parsed.is_signature_valid


def test_a_csr_whose_body_is_not_der_still_fails():
    with pytest.raises(BadRequest, match="malformed CSR"):
        parse_csr(_pem(WITH_NULL + b"\x00" * 8))
