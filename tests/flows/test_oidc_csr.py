"""``OIDC_AUTH_WITH_CSR``: a CSR given at OIDC login comes back signed as ``session_cert``, and the tokens are bound to it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes

from harness.client import ZitiClient
from harness.client import pki as hp
from tests.flows.oidc_support import bearer, code_of, exchange, oauth_error, password_identity, start

ME = "/edge/client/v1/current-identity"
TOKEN = "/oidc/oauth/token"


def claims_of(token: str) -> dict:
    return jwt.decode(token, options={"verify_signature": False})


def login_with_csr(http, name: str, csr_pem: str | None):
    """A password login by OIDC whose body carries ``csrPem``; the token endpoint's reply."""
    request_id, verifier = start(http, method="password")
    body = {"id": request_id, "username": name, "password": "s3cret-pw"}
    if csr_pem is not None:
        body["csrPem"] = csr_pem
    assert http.post("/oidc/login/password", json=body).status_code == 302
    return exchange(http, code_of(http, request_id), verifier)


def sha1(cert: x509.Certificate) -> str:
    """The fingerprint ``z_cfs`` holds: SHA-1 of the DER, lower-case hex."""
    return cert.fingerprint(hashes.SHA1()).hex()


def to_the_pki_clock(clock) -> None:
    """The controller's PKI signs by the wall clock; move the frozen API clock there so its certificates are current."""
    clock.set(datetime.now(timezone.utc) + timedelta(seconds=1))


def session_cert(pem: str) -> x509.Certificate:
    return x509.load_pem_x509_certificates(pem.encode())[0]


def test_a_login_csr_is_signed_into_the_session_certificate_the_tokens_are_bound_to(
    ziti_app, ziti_admin, ziti_unique, ziti_clock
):
    name = ziti_unique("csr-user")
    identity_id = password_identity(ziti_admin, name)
    to_the_pki_clock(ziti_clock)
    csr, key = hp.make_csr(name)
    with ZitiClient.in_process(ziti_app) as anonymous:
        reply = login_with_csr(anonymous.http, name, hp.csr_pem(csr))
        assert reply.status_code == 200, reply.text
        tokens = reply.json()
        cert = session_cert(tokens["session_cert"])
        access = claims_of(tokens["access_token"])
        uri = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        [spiffe] = uri.get_values_for_type(x509.UniformResourceIdentifier)
        assert f"/identity/{identity_id}/apiSession/{access['z_asid']}/apiSessionCertificate/" in spiffe
        assert cert.public_key().public_numbers() == key.public_key().public_numbers()
        assert (cert.not_valid_after_utc - cert.not_valid_before_utc).days >= 364
        assert access["z_cfs"] == [sha1(cert)]
        assert anonymous.http.get(ME, headers=bearer(tokens["access_token"])).status_code == 401  # no cert held
    with ZitiClient.in_process(ziti_app, peer_certs=[cert]) as holder:
        mine = holder.http.get(ME, headers=bearer(tokens["access_token"]))
        assert mine.status_code == 200, (mine.text, mine.headers.get("www-authenticate"))
        assert mine.json()["data"]["id"] == identity_id


def test_a_refresh_with_a_new_csr_rotates_the_session_certificate(ziti_app, ziti_admin, ziti_unique, ziti_clock):
    name = ziti_unique("csr-rotate")
    password_identity(ziti_admin, name)
    to_the_pki_clock(ziti_clock)
    first_csr, _ = hp.make_csr(name)
    with ZitiClient.in_process(ziti_app) as anonymous:
        tokens = login_with_csr(anonymous.http, name, hp.csr_pem(first_csr)).json()
    first = session_cert(tokens["session_cert"])
    second_csr, _ = hp.make_csr(name)
    form = {"grant_type": "refresh_token", "client_id": "openziti", "refresh_token": tokens["refresh_token"]}
    with ZitiClient.in_process(ziti_app, peer_certs=[first]) as holder:
        reply = holder.http.post(TOKEN, data={**form, "csr_pem": hp.csr_pem(second_csr)})
        assert reply.status_code == 200, reply.text
        renewed = reply.json()
    second = session_cert(renewed["session_cert"])
    assert claims_of(renewed["access_token"])["z_cfs"] == [sha1(second)]
    assert second.serial_number != first.serial_number
    with ZitiClient.in_process(ziti_app, peer_certs=[second]) as holder:
        assert holder.http.get(ME, headers=bearer(renewed["access_token"])).status_code == 200


def test_no_csr_no_certificate_and_a_bad_csr_is_an_invalid_request(ziti_app, ziti_admin, ziti_unique):
    name = ziti_unique("csr-none")
    password_identity(ziti_admin, name)
    with ZitiClient.in_process(ziti_app) as anonymous:
        plain = login_with_csr(anonymous.http, name, None).json()
        assert "session_cert" not in plain and not claims_of(plain["access_token"]).get("z_cfs")
        # a bearer session ignores a CSR on refresh, as the real one (no certificate binding to rotate)
        form = {"grant_type": "refresh_token", "client_id": "openziti", "refresh_token": plain["refresh_token"]}
        csr, _ = hp.make_csr(name)
        refreshed = anonymous.http.post(TOKEN, data={**form, "csr_pem": hp.csr_pem(csr)}).json()
        assert "session_cert" not in refreshed
        bad = login_with_csr(anonymous.http, name, "-----BEGIN CERTIFICATE REQUEST-----\nnope\n")
        oauth_error(bad, 400, "invalid_request")
        assert bad.json()["error_description"].startswith("invalid CSR: ")
