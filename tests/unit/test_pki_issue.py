"""Certificates issued from CSRs: validity, usages, subjects, SANs, serials."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from controller.clock import FrozenClock
from controller.pki import ControllerPKI, load_pem_chain
from controller.pki.issue import SERIAL_LIMIT, add_year
from harness.client import pki as hp

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return ControllerPKI.load_or_create(tmp_path_factory.mktemp("pki"), clock=FrozenClock(NOW))


def _ext(cert, cls):
    try:
        return cert.extensions.get_extension_for_class(cls)
    except x509.ExtensionNotFound:
        return None


def _uris(cert):
    return _ext(cert, x509.SubjectAlternativeName).value.get_values_for_type(x509.UniformResourceIdentifier)


def _assert_client_usage(cert):
    usage = _ext(cert, x509.KeyUsage)
    assert usage.critical
    value = usage.value
    assert value.digital_signature and value.key_encipherment and value.data_encipherment
    assert not value.key_cert_sign
    assert list(_ext(cert, x509.ExtendedKeyUsage).value) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    assert _ext(cert, x509.BasicConstraints) is None


def test_identity_cert(pki):
    csr, key = hp.make_csr("sdk-name", dc="https://127.0.0.1:1280", dns=["dropped.example"], uris=["urn:dropped"])
    cert = pki.sign_identity_csr(csr, "ident-1")
    assert cert.not_valid_before_utc == NOW - timedelta(minutes=1)
    assert cert.not_valid_after_utc == NOW.replace(year=2026)
    _assert_client_usage(cert)
    assert cert.subject == csr.subject
    sans = _ext(cert, x509.SubjectAlternativeName).value
    assert list(sans) == [x509.UniformResourceIdentifier(f"{pki.trust_domain}/identity/ident-1")]
    assert cert.issuer == pki.intermediate_cert.subject
    cert.verify_directly_issued_by(pki.intermediate_cert)
    assert cert.public_key().public_numbers() == key.public_key().public_numbers()


def test_identity_cert_accepts_pem_text(pki):
    csr, _ = hp.make_csr("x")
    assert pki.sign_identity_csr(hp.csr_pem(csr), "id2").subject == csr.subject


def test_chain_pem_is_leaf_then_intermediate(pki):
    csr, _ = hp.make_csr("x")
    cert = pki.sign_identity_csr(csr, "id3")
    chain = load_pem_chain(pki.chain_pem(cert))
    expected = [cert, pki.intermediate_cert]
    assert [hp.sha1_fingerprint(c) for c in chain] == [hp.sha1_fingerprint(c) for c in expected]


def test_extension_keeps_sans_takes_new_subject(pki):
    old_csr, _ = hp.make_csr("old-name")
    current = pki.sign_identity_csr(old_csr, "ident-9")
    new_csr, new_key = hp.make_csr("new-name", dns=["ignored.example"])
    extended = pki.extend_identity_cert(new_csr, current)
    assert extended.subject == new_csr.subject
    assert _uris(extended) == _uris(current)
    assert extended.public_key().public_numbers() == new_key.public_key().public_numbers()
    _assert_client_usage(extended)
    assert extended.not_valid_after_utc == NOW.replace(year=2026)


def test_api_session_cert(pki):
    csr, _ = hp.make_csr("whatever-the-sdk-sent", o="Someone")
    cert = pki.sign_api_session_csr(csr, "ident-1", "sess-cuid", "cert-7")
    assert cert.not_valid_before_utc == NOW
    assert cert.not_valid_after_utc == NOW + timedelta(hours=12)
    assert cert.subject == x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ident-1")])
    assert _uris(cert) == [f"{pki.trust_domain}/identity/ident-1/apiSession/sess-cuid/apiSessionCertificate/cert-7"]
    _assert_client_usage(cert)


def test_router_certs(pki):
    client_csr, _ = hp.make_csr("router-1", o=None)
    server_csr, _ = hp.make_csr("router-1", o=None, dns=["router.example", "localhost"], ips=["10.0.0.5"])
    client, server = pki.sign_router_csrs(client_csr, server_csr)
    assert list(_ext(client, x509.ExtendedKeyUsage).value) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    assert list(_ext(server, x509.ExtendedKeyUsage).value) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert client.subject == client_csr.subject and server.subject == server_csr.subject
    assert _ext(client, x509.SubjectAlternativeName) is None
    server_sans = _ext(server, x509.SubjectAlternativeName).value
    assert server_sans.get_values_for_type(x509.DNSName) == ["router.example", "localhost"]
    assert [str(ip) for ip in server_sans.get_values_for_type(x509.IPAddress)] == ["10.0.0.5"]
    for cert in (client, server):
        assert cert.not_valid_before_utc == NOW - timedelta(minutes=1)
        assert cert.not_valid_after_utc == NOW.replace(year=2026)
        assert _ext(cert, x509.BasicConstraints) is None


def test_empty_subject_makes_sans_critical(pki):
    csr, _ = hp.make_csr(None, o=None)
    cert = pki.sign_identity_csr(csr, "anon")
    assert _ext(cert, x509.SubjectAlternativeName).critical


def test_serials_random_positive_below_2_159(pki):
    csr, _ = hp.make_csr("x")
    serials = {pki.sign_identity_csr(csr, "s").serial_number for _ in range(20)}
    assert len(serials) == 20
    assert all(0 < s < SERIAL_LIMIT for s in serials)


def test_uses_the_injected_clock(tmp_path):
    clock = FrozenClock("2030-06-15T08:00:00Z")
    pki = ControllerPKI.load_or_create(tmp_path, clock=clock)
    csr, _ = hp.make_csr("x")
    clock.advance(hours=5)
    cert = pki.sign_identity_csr(csr, "id")
    assert cert.not_valid_before_utc == clock.now() - timedelta(minutes=1)


def test_add_year_leap_day():
    assert add_year(datetime(2024, 2, 29, tzinfo=timezone.utc)) == datetime(2025, 3, 1, tzinfo=timezone.utc)
    assert add_year(datetime(2025, 5, 2, tzinfo=timezone.utc)) == datetime(2026, 5, 2, tzinfo=timezone.utc)


def test_issued_cert_der_roundtrip(pki):
    csr, _ = hp.make_csr("x")
    cert = pki.sign_identity_csr(csr, "id")
    again = x509.load_der_x509_certificate(cert.public_bytes(serialization.Encoding.DER))
    assert again == cert
