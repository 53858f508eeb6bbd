"""ControllerPKI: generation, reuse, bundles, PKCS#7, trust domain, JWT key."""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import stat
from datetime import timedelta

import jwt
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs7

from controller.clock import FrozenClock
from controller.pki import ControllerPKI, PKIError, load_pem_chain
from controller.pki.ca import FILES
from harness.client import pki as hp


@pytest.fixture()
def clock():
    return FrozenClock("2025-03-01T00:00:00Z")


@pytest.fixture()
def pki(tmp_path, clock):
    return ControllerPKI.load_or_create(tmp_path / "pki", clock=clock)


def _sans(cert):
    return cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value


def _der(cert):
    return cert.public_bytes(serialization.Encoding.DER)


def test_generates_all_files_with_private_key_permissions(pki):
    for label, filename in FILES.items():
        path = pki.folder / filename
        assert path.exists(), filename
        if label.endswith("_key"):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_ca_hierarchy(pki):
    root, inter = pki.root_cert, pki.intermediate_cert
    assert root.issuer == root.subject
    assert root.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert inter.issuer == root.subject
    constraints = inter.extensions.get_extension_for_class(x509.BasicConstraints).value
    assert constraints.ca and constraints.path_length == 0
    inter.verify_directly_issued_by(root)
    pki.server_cert.verify_directly_issued_by(inter)


def test_server_cert_covers_localhost_and_loopback(pki):
    sans = _sans(pki.server_cert)
    assert "localhost" in sans.get_values_for_type(x509.DNSName)
    assert ipaddress.ip_address("127.0.0.1") in sans.get_values_for_type(x509.IPAddress)
    eku = pki.server_cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert x509.oid.ExtendedKeyUsageOID.SERVER_AUTH in eku


def test_configured_names_are_added(tmp_path, clock):
    pki = ControllerPKI.load_or_create(
        tmp_path, hostnames=("ctrl.example.org", "10.1.2.3"), ip_addresses=("192.168.0.9",), clock=clock
    )
    sans = _sans(pki.server_cert)
    assert set(sans.get_values_for_type(x509.DNSName)) == {"localhost", "ctrl.example.org"}
    assert {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", "10.1.2.3", "192.168.0.9"}


def test_reuse_keeps_everything(tmp_path, clock):
    first = ControllerPKI.load_or_create(tmp_path, clock=clock)
    second = ControllerPKI.load_or_create(tmp_path, clock=clock)
    for attr in ("root_cert", "intermediate_cert", "server_cert"):
        assert _der(getattr(first, attr)) == _der(getattr(second, attr))
    assert first.trust_domain == second.trust_domain


def test_changed_names_regenerate_only_the_server_cert(tmp_path, clock):
    first = ControllerPKI.load_or_create(tmp_path, clock=clock)
    second = ControllerPKI.load_or_create(tmp_path, hostnames=("localhost", "new.example"), clock=clock)
    assert _der(first.root_cert) == _der(second.root_cert)
    assert _der(first.intermediate_cert) == _der(second.intermediate_cert)
    assert _der(first.server_cert) != _der(second.server_cert)
    assert "new.example" in _sans(second.server_cert).get_values_for_type(x509.DNSName)
    third = ControllerPKI.load_or_create(tmp_path, hostnames=("localhost", "new.example"), clock=clock)
    assert _der(third.server_cert) == _der(second.server_cert)


def test_server_cert_renewed_near_expiry(tmp_path, clock):
    first = ControllerPKI.load_or_create(tmp_path, clock=clock)
    clock.set(first.server_cert.not_valid_after_utc.replace(microsecond=0) - timedelta(days=10))
    second = ControllerPKI.load_or_create(tmp_path, clock=clock)
    assert _der(first.server_cert) != _der(second.server_cert)
    assert _der(first.root_cert) == _der(second.root_cert)


def test_partial_ca_folder_is_refused(tmp_path, clock):
    ControllerPKI.load_or_create(tmp_path, clock=clock)
    (tmp_path / FILES["intermediate_key"]).unlink()
    with pytest.raises(PKIError):
        ControllerPKI.load_or_create(tmp_path, clock=clock)


def test_mismatched_ca_key_is_refused(tmp_path, clock):
    ControllerPKI.load_or_create(tmp_path, clock=clock)
    (tmp_path / FILES["root_key"]).write_text(hp.key_pem(hp.new_key("ec")))
    with pytest.raises(PKIError):
        ControllerPKI.load_or_create(tmp_path, clock=clock)


def test_bundles(pki):
    chain = load_pem_chain(pki.server_chain_pem())
    assert [_der(c) for c in chain] == [_der(pki.server_cert), _der(pki.intermediate_cert)]
    bundle = load_pem_chain(pki.ca_bundle_pem())
    assert {_der(c) for c in bundle} == {_der(pki.root_cert), _der(pki.intermediate_cert)}


def test_cacerts_pkcs7_format(pki):
    text = pki.cacerts_pkcs7_b64()
    lines = text.split("\n")
    assert len(lines) > 1
    assert all(len(line) == 64 for line in lines[:-1])
    assert 0 < len(lines[-1]) <= 64
    assert not text.endswith("\n") and "\r" not in text
    certs = pkcs7.load_der_pkcs7_certificates(base64.b64decode(text))
    assert {_der(c) for c in certs} == {_der(pki.root_cert), _der(pki.intermediate_cert)}


def test_trust_domain_default_is_sha1_of_root(pki):
    assert pki.trust_domain == "spiffe://" + hashlib.sha1(_der(pki.root_cert)).hexdigest()


@pytest.mark.parametrize("configured", ["example.org", "spiffe://example.org", "spiffe://example.org/"])
def test_trust_domain_configured(tmp_path, clock, configured):
    pki = ControllerPKI.load_or_create(tmp_path, clock=clock, trust_domain=configured)
    assert pki.trust_domain == "spiffe://example.org"


def test_jwt_signing_key_is_the_server_cert_key(pki):
    key, alg, kid = pki.jwt_signing_key()
    assert alg == "RS256"  # the default server key is RSA, as the real quickstart
    assert kid == hashlib.sha1(_der(pki.server_cert)).hexdigest()
    token = jwt.encode({"sub": "x"}, key, algorithm=alg, headers={"kid": kid})
    # A client verifies with the public key of the TLS cert it was served.
    claims = jwt.decode(token, pki.server_cert.public_key(), algorithms=[alg])
    assert claims["sub"] == "x"
    assert jwt.get_unverified_header(token)["kid"] == kid


def test_verify_peer_chain_proper_and_improper(pki):
    csr, _key = hp.make_csr("someone")
    leaf = pki.sign_identity_csr(csr, "identity1")
    chain, improper = pki.verify_peer_chain([leaf, pki.intermediate_cert])
    assert chain and not improper
    chain, improper = pki.verify_peer_chain([leaf])
    assert chain and improper
    assert pki.verify_peer_chain([]) == (None, False)


def test_verify_peer_chain_rejects_foreign_and_ignores_leaf_dates(pki, clock):
    root = hp.make_root_ca(now=clock.now())
    foreign = hp.make_leaf(hp.make_intermediate_ca(root, now=clock.now()), now=clock.now())
    assert pki.verify_peer_chain([foreign.cert, *foreign.chain]) == (None, False)
    csr, _key = hp.make_csr("someone")
    leaf = pki.sign_identity_csr(csr, "identity1")
    clock.advance(days=400)  # leaf expired, CAs still valid
    chain, _ = pki.verify_peer_chain([leaf, pki.intermediate_cert])
    assert chain is not None
