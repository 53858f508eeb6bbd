"""One-time-token enrollment: CSR formats, replies, the issued certificate, token rules."""

from __future__ import annotations

import jwt
import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from harness.client import pki as hp
from harness.client.enroll import ott_csr
from tests.support import (
    CLIENT,
    CONTROLLER_URL,
    assert_error,
    cert_login,
    enroll_ott,
    new_identity,
    ok,
    pending,
    post_csr,
    session_of,
)


def test_ott_enrollment_issues_a_network_certificate_that_logs_in(cert_admin, cert_api, make_cert_api, ziti_unique):
    identity_id = new_identity(cert_admin, ziti_unique("ott"), {"ott": True})
    client = enroll_ott(cert_api, pending(cert_admin, identity_id, "ott")["token"], identity_id)

    assert len(client.chain) == 1 and client.chain[0].subject != client.chain[0].issuer  # leaf + intermediate, no root
    sans = client.cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    uris = sans.get_values_for_type(x509.UniformResourceIdentifier)
    assert len(list(sans)) == 1 and uris[0].startswith("spiffe://") and uris[0].endswith(f"/identity/{identity_id}")
    assert (
        ExtendedKeyUsageOID.CLIENT_AUTH in client.cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    )
    detail = cert_admin.mgmt_ok("GET", f"/identities/{identity_id}")
    assert detail["enrollment"] == {}
    assert detail["authenticators"]["cert"]["fingerprint"] == client.fingerprint
    authenticator = cert_admin.mgmt_ok("GET", f"/authenticators/{detail['authenticators']['cert']['id']}")
    assert authenticator["isIssuedByNetwork"] is True and authenticator["method"] == "cert"

    session = session_of(cert_api, cert_login(make_cert_api(client)))
    assert session.edge_ok("GET", "/current-identity")["id"] == identity_id


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-pem-file", "application/pkcs7"])
def test_csr_is_accepted_as_a_text_body(cert_admin, cert_api, ziti_unique, content_type):
    identity_id = new_identity(cert_admin, ziti_unique("ctype"), {"ott": True})
    csr_pem, _ = ott_csr(identity_id, CONTROLLER_URL)
    response = post_csr(cert_api, pending(cert_admin, identity_id, "ott")["token"], csr_pem, content_type=content_type)
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
    assert response.json()["data"]["cert"].startswith("-----BEGIN CERTIFICATE-----")
    assert response.json()["meta"] == {}


def test_json_client_csr_and_the_explicit_ott_path(cert_admin, cert_api, ziti_unique):
    first = new_identity(cert_admin, ziti_unique("json"), {"ott": True})
    csr_pem, _ = ott_csr(first, CONTROLLER_URL)
    response = cert_api.request(
        "POST",
        CLIENT + "/enroll",
        params={"method": "ott", "token": pending(cert_admin, first, "ott")["token"]},
        json={"clientCsr": csr_pem},
    )
    assert ok(response)["cert"]
    second = new_identity(cert_admin, ziti_unique("explicit"), {"ott": True})
    response = cert_api.request(
        "POST",
        CLIENT + "/enroll/ott",
        json={"token": pending(cert_admin, second, "ott")["token"], "clientCsr": csr_pem},
    )
    assert ok(response)["cert"]


def test_accepting_only_pem_gets_the_chain_as_pem(cert_admin, cert_api, ziti_unique):
    identity_id = new_identity(cert_admin, ziti_unique("pem"), {"ott": True})
    csr_pem, _ = ott_csr(identity_id, CONTROLLER_URL)
    response = post_csr(
        cert_api, pending(cert_admin, identity_id, "ott")["token"], csr_pem, accept="application/x-pem-file"
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/x-pem-file")
    assert len(x509.load_pem_x509_certificates(response.content)) == 2


def test_rsa_csr_enrolls_and_logs_in(cert_admin, cert_api, make_cert_api, ziti_unique):
    identity_id = new_identity(cert_admin, ziti_unique("rsa"), {"ott": True})
    client = enroll_ott(cert_api, pending(cert_admin, identity_id, "ott")["token"], identity_id, key_type="rsa")
    assert ok(cert_login(make_cert_api(client)))["identityId"] == identity_id


def test_token_is_single_use(cert_admin, cert_api, ziti_unique):
    identity_id = new_identity(cert_admin, ziti_unique("once"), {"ott": True})
    token = pending(cert_admin, identity_id, "ott")["token"]
    enroll_ott(cert_api, token)
    csr_pem, _ = ott_csr(identity_id, CONTROLLER_URL)
    assert_error(post_csr(cert_api, token, csr_pem), 400, "INVALID_ENROLLMENT_TOKEN")


def test_expired_token_is_enrollment_expired(cert_admin, cert_api, ziti_clock, ziti_unique):
    identity_id = new_identity(cert_admin, ziti_unique("late"), {"ott": True})
    token = pending(cert_admin, identity_id, "ott")["token"]
    ziti_clock.advance(minutes=180, seconds=1)
    csr_pem, _ = ott_csr(identity_id, CONTROLLER_URL)
    assert_error(post_csr(cert_api, token, csr_pem), 400, "ENROLLMENT_EXPIRED")


def test_unknown_token_and_wrong_method_are_rejected(cert_admin, cert_api, ziti_unique):
    csr_pem, _ = ott_csr("x", CONTROLLER_URL)
    assert_error(post_csr(cert_api, "4b1f0c55-0000-4000-8000-000000000000", csr_pem), 400, "INVALID_ENROLLMENT_TOKEN")
    identity_id = new_identity(cert_admin, ziti_unique("method"), {"ott": True})
    token = pending(cert_admin, identity_id, "ott")["token"]
    response = cert_api.request(
        "POST", CLIENT + "/enroll", params={"method": "updb", "token": token}, json={"password": "some-pass"}
    )
    assert_error(response, 400, "INVALID_ENROLL_METHOD")
    response = cert_api.request("POST", CLIENT + "/enroll", params={"method": "telepathy", "token": token}, json={})
    assert_error(response, 400, "INVALID_ENROLL_METHOD")


@pytest.mark.parametrize("csr", ["not a csr", "", "twice"], ids=["garbage", "empty", "two-blocks"])
def test_bad_csr_is_could_not_process_csr_and_keeps_the_token(cert_admin, cert_api, ziti_unique, csr):
    identity_id = new_identity(cert_admin, ziti_unique("badcsr"), {"ott": True})
    token = pending(cert_admin, identity_id, "ott")["token"]
    good, _ = ott_csr(identity_id, CONTROLLER_URL)
    body = good + good if csr == "twice" else csr
    assert_error(post_csr(cert_api, token, body), 400, "COULD_NOT_PROCESS_CSR")
    assert enroll_ott(cert_api, token).cert is not None


def test_weak_rsa_csr_is_refused(cert_admin, cert_api, ziti_unique):
    identity_id = new_identity(cert_admin, ziti_unique("weak"), {"ott": True})
    csr, _ = hp.make_csr(identity_id, key_type="rsa1024")
    assert_error(
        post_csr(cert_api, pending(cert_admin, identity_id, "ott")["token"], hp.csr_pem(csr)),
        400,
        "COULD_NOT_PROCESS_CSR",
    )


def test_enrollment_jwt_has_the_real_claims_and_verifies_with_the_jwks(cert_admin, cert_api, ziti_unique):
    identity_id = new_identity(cert_admin, ziti_unique("claims"), {"ott": True})
    ott = pending(cert_admin, identity_id, "ott")
    header = jwt.get_unverified_header(ott["jwt"])
    jwk = next(k for k in cert_api.request("GET", CLIENT + "/enroll/jwks").json()["keys"] if k["kid"] == header["kid"])
    key = jwt.PyJWK(jwk).key
    claims = jwt.decode(ott["jwt"], key, algorithms=[header["alg"]], options={"verify_aud": False, "verify_exp": False})
    assert claims["sub"] == identity_id and claims["jti"] == ott["token"] and claims["em"] == "ott"
    assert claims["aud"] == [""] and claims["iss"] == CONTROLLER_URL and "iat" not in claims
    assert header["typ"] == "JWT" and header["alg"] in ("ES256", "RS256")


def test_identity_already_holding_a_cert_cannot_enroll_a_second(cert_admin, cert_api, ziti_unique):
    identity_id = new_identity(cert_admin, ziti_unique("twice"), {"ott": True})
    enroll_ott(cert_api, pending(cert_admin, identity_id, "ott")["token"])
    cert_admin.mgmt_ok(
        "POST",
        "/enrollments",
        json={"method": "ott", "identityId": identity_id, "expiresAt": "2099-01-01T00:00:00.000Z"},
    )
    csr_pem, _ = ott_csr(identity_id, CONTROLLER_URL)
    response = post_csr(cert_api, pending(cert_admin, identity_id, "ott")["token"], csr_pem)
    assert_error(response, 409, "MAX_AUTHENTICATOR_METHODS_REACHED")
