"""parse_csr: exactly one valid PEM CSR, else COULD_NOT_PROCESS_CSR."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives import serialization

from controller.errors import BadRequest
from controller.pki import parse_csr
from harness.client import pki as hp


@pytest.fixture(scope="module")
def csr_text():
    csr, _ = hp.make_csr("client", dc="https://127.0.0.1:1280")
    return hp.csr_pem(csr)


def _body(csr_text: str) -> str:
    return csr_text.strip().split("\n", 1)[1].rsplit("\n", 1)[0]


def _reject(data):
    with pytest.raises(BadRequest) as info:
        parse_csr(data)
    assert info.value.code == "COULD_NOT_PROCESS_CSR"
    return info.value


def test_accepts_sdk_style_csr(csr_text):
    csr = parse_csr(csr_text)
    assert csr.subject.rfc4514_string() == "CN=client,DC=https://127.0.0.1:1280,O=OpenZiti"


@pytest.mark.parametrize("suffix", ["", "\n", "\r\n"])
def test_accepts_at_most_one_line_break(csr_text, suffix):
    parse_csr(csr_text.rstrip("\n") + suffix)


def test_accepts_bytes_and_crlf_lines(csr_text):
    parse_csr(csr_text.encode())
    parse_csr(csr_text.replace("\n", "\r\n"))


def test_accepts_rsa_and_old_header(csr_text):
    csr, _ = hp.make_csr("rsa", key_type="rsa")
    parse_csr(hp.csr_pem(csr))
    parse_csr(csr_text.replace("CERTIFICATE REQUEST", "NEW CERTIFICATE REQUEST"))


@pytest.mark.parametrize("extra", ["\n\n", "junk", "\n-----BEGIN X-----\nAAAA\n-----END X-----\n", " \n \n"])
def test_rejects_anything_after_the_block(csr_text, extra):
    _reject(csr_text.rstrip("\n") + extra)


def test_rejects_two_blocks(csr_text):
    _reject(csr_text + csr_text)


def test_rejects_leading_garbage(csr_text):
    _reject("hello\n" + csr_text)


@pytest.mark.parametrize("data", ["", "   ", "not pem", b"\xff\xfe", None, 42])
def test_rejects_non_pem(data):
    _reject(data)


def test_rejects_certificate_block():
    leaf = hp.make_leaf(hp.make_root_ca())
    _reject(leaf.cert_pem)


def test_rejects_bad_base64(csr_text):
    body = _body(csr_text)
    _reject(csr_text.replace(body, body[:10] + "!" + body[11:]))


def test_rejects_bad_der():
    junk = base64.encodebytes(b"\x30\x03\x02\x01\x01" * 10).decode()
    _reject(f"-----BEGIN CERTIFICATE REQUEST-----\n{junk}-----END CERTIFICATE REQUEST-----\n")


def test_rejects_mismatched_end_marker(csr_text):
    _reject(csr_text.replace("END CERTIFICATE REQUEST", "END CERTIFICATE"))


def test_rejects_bad_signature():
    csr, _ = hp.make_csr("client")
    der = bytearray(csr.public_bytes(serialization.Encoding.DER))
    der[-1] ^= 0x01  # last byte of the ECDSA signature
    body = base64.encodebytes(bytes(der)).decode()
    _reject(f"-----BEGIN CERTIFICATE REQUEST-----\n{body}-----END CERTIFICATE REQUEST-----\n")


def test_rejects_csr_signed_by_another_key():
    csr, _ = hp.make_csr("client")
    other, _ = hp.make_csr("client")
    # Splice: the request info of one CSR with the signature of another.
    der_a = csr.public_bytes(serialization.Encoding.DER)
    der_b = other.public_bytes(serialization.Encoding.DER)
    tbs_a = csr.tbs_certrequest_bytes
    sig_tail_b = der_b[der_b.index(other.tbs_certrequest_bytes) + len(other.tbs_certrequest_bytes) :]
    body = tbs_a + sig_tail_b
    spliced = _der_sequence(body)
    assert spliced != der_a
    pem_text = base64.encodebytes(spliced).decode()
    _reject(f"-----BEGIN CERTIFICATE REQUEST-----\n{pem_text}-----END CERTIFICATE REQUEST-----\n")


def _der_sequence(content: bytes) -> bytes:
    length = len(content)
    if length < 0x80:
        return b"\x30" + bytes([length]) + content
    octets = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return b"\x30" + bytes([0x80 | len(octets)]) + octets + content


def test_rejects_weak_rsa_key():
    csr, _ = hp.make_csr("weak", key_type="rsa1024")
    _reject(hp.csr_pem(csr))


@pytest.mark.parametrize(
    "payload",
    [
        " " * 1_000_000 + "x",
        "-----BEGIN CERTIFICATE REQUEST-----\n" + "A" * 1_000_000 + "-----END CERTIFICATE REQUEST-----x",
        "-----BEGIN CERTIFICATE REQUEST-----\n" + "AAAA\n-----END CERTIFICATE REQUEST----- \n" * 25_000,
    ],
)
def test_adversarial_input_is_fast(payload):
    import time

    started = time.monotonic()
    _reject(payload)
    assert time.monotonic() - started < 2
