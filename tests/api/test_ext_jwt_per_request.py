"""An external JWT as the only credential of one request (no API session), on both APIs.

The first tests are the C SDK's ziti-2.x ``[enroll-mode]`` scenarios: a client
enrolls by an external JWT (or its identity was made beforehand) and then
calls ``GET /current-identity`` and ``GET /services`` with nothing but
``Authorization: Bearer <that JWT>``.
"""

from __future__ import annotations

import pytest
from cryptography import x509

from harness.client import ZitiClient
from harness.client import pki as hp
from tests.api.jwt_support import SigningKey, claims, signer_body
from tests.support import assert_error, auth_policy_body, code, secret_of

CLIENT = "/edge/client/v1"
MISSING = (
    'zt-session realm="zt-session" error="missing" error_description="no matching token was provided",'
    'Bearer realm="openziti-oidc" error="missing" error_description="no matching token was provided"'
)


@pytest.fixture(scope="module")
def key():
    return SigningKey("per-request-kid")


@pytest.fixture
def make_signer(ziti_admin, jwks_server, key, ziti_unique):
    """An enabled JWKS signer matching identities by ``externalId``; returns ``(id, issuer)``."""

    def make(**fields):
        name = ziti_unique("prsigner")
        issuer = f"https://{name}.example"
        body = signer_body(name, issuer, jwks=jwks_server.publish(f"/{name}/jwks", key), useExternalId=True)
        return ziti_admin.create("external-jwt-signers", {**body, **fields}), issuer

    return make


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def test_enroll_to_cert_then_the_certificate_logs_in_and_lists_services(
    ziti, ziti_app, make_signer, key, ziti_clock, ziti_unique
):
    _, issuer = make_signer(enrollToCertEnabled=True)
    csr, _ = hp.make_csr("test-cert-svc")
    token = key.token(claims(issuer, ziti_unique("cert-svc"), ziti_clock))
    enrolled = ziti.request(
        "POST", CLIENT + "/enroll/token", json={"clientCsr": hp.csr_pem(csr)}, headers=bearer(token)
    )
    assert enrolled.status_code == 200, enrolled.text
    chain = x509.load_pem_x509_certificates(enrolled.json()["data"]["cert"].encode())
    with ZitiClient.in_process(ziti_app, peer_certs=chain) as holder:
        holder.login_cert()
        assert holder.edge("GET", "/services").status_code == 200


def test_enroll_to_token_then_the_jwt_alone_reads_the_identity_and_lists_services(
    ziti, make_signer, key, ziti_clock, ziti_unique
):
    _, issuer = make_signer(enrollToTokenEnabled=True)
    subject = ziti_unique("token-svc")
    token = key.token(claims(issuer, subject, ziti_clock))
    enrolled = ziti.request("POST", CLIENT + "/enroll/token", json={}, headers=bearer(token))
    assert enrolled.status_code == 200 and enrolled.json()["data"] == {}
    me = ziti.edge_ok("GET", "/current-identity", headers=bearer(token))
    assert me["externalId"] == subject
    assert ziti.edge("GET", "/services", headers=bearer(token)).status_code == 200


def test_a_precreated_identity_is_found_by_external_id_and_sees_its_services(
    ziti, ziti_admin, make_signer, make_identity, make_policy, key, ziti_clock, ziti_unique
):
    _, issuer = make_signer()
    name = ziti_unique("precreated")
    make_identity(name, externalId=name, roleAttributes=["per-request-client"])
    service_id = ziti_admin.create("services", {"name": ziti_unique("svc"), "encryptionRequired": True})
    make_policy("service-policies", type="Dial", identityRoles=["#per-request-client"], serviceRoles=[f"@{service_id}"])
    token = key.token(claims(issuer, name, ziti_clock))
    assert ziti.edge_ok("GET", "/current-identity", headers=bearer(token))["name"] == name
    listed = ziti.edge_ok("GET", "/services", headers=bearer(token), params={"limit": 500})
    assert service_id in [service["id"] for service in listed]


def test_enrolling_the_same_subject_twice_is_refused(ziti, make_signer, key, ziti_clock, ziti_unique):
    _, issuer = make_signer(enrollToTokenEnabled=True)
    subject = ziti_unique("token-dup")
    first = key.token(claims(issuer, subject, ziti_clock))
    assert ziti.request("POST", CLIENT + "/enroll/token", json={}, headers=bearer(first)).status_code == 200
    second = key.token(claims(issuer, subject, ziti_clock, jti="second"))
    again = ziti.request("POST", CLIENT + "/enroll/token", json={}, headers=bearer(second))
    assert_error(again, 409, "ENROLLMENT_IDENTITY_ALREADY_ENROLLED")


def test_a_csr_with_a_token_only_signer_is_refused(ziti, make_signer, key, ziti_clock, ziti_unique):
    _, issuer = make_signer(enrollToTokenEnabled=True)
    csr, _ = hp.make_csr("test-wrong-signer")
    token = key.token(claims(issuer, ziti_unique("cert-wrong"), ziti_clock))
    body = {"clientCsr": hp.csr_pem(csr)}
    refused = ziti.request("POST", CLIENT + "/enroll/token", json=body, headers=bearer(token))
    assert_error(refused, 409, "INVALID_ENROLLMENT_NOT_ALLOWED")


def test_an_expired_jwt_neither_enrolls_nor_authenticates(ziti, make_signer, key, ziti_clock, ziti_unique):
    _, issuer = make_signer(enrollToTokenEnabled=True)
    token = key.token(claims(issuer, ziti_unique("token-expired"), ziti_clock, lifetime=-60))
    refused = ziti.request("POST", CLIENT + "/enroll/token", json={}, headers=bearer(token))
    assert_error(refused, 400, "INVALID_ENROLLMENT_TOKEN")
    response = ziti.edge("GET", "/current-identity", headers=bearer(token))
    assert_error(response, 401, "UNAUTHORIZED")
    assert response.headers["www-authenticate"] == MISSING


# -- beyond the SDK's scenarios ----------------------------------------------------------------


def test_the_management_api_takes_an_admins_jwt_and_opens_no_api_session(
    ziti, ziti_admin, make_signer, make_identity, key, ziti_clock, ziti_unique
):
    _, issuer = make_signer()
    name = ziti_unique("jwt-admin")
    identity_id = make_identity(name, externalId=name, isAdmin=True)
    token = key.token(claims(issuer, name, ziti_clock))
    data = ziti.mgmt_ok("GET", f"/identities/{identity_id}", headers=bearer(token))
    assert data["name"] == name
    sessions = ziti_admin.mgmt_ok("GET", "/api-sessions", params={"filter": f'identity = "{identity_id}"'})
    assert sessions == []


def test_a_non_admin_jwt_is_refused_by_admin_operations(ziti, make_signer, make_identity, key, ziti_clock, ziti_unique):
    _, issuer = make_signer()
    name = ziti_unique("jwt-plain")
    make_identity(name, externalId=name)
    token = key.token(claims(issuer, name, ziti_clock))
    assert_error(ziti.mgmt("GET", "/identities", headers=bearer(token)), 401, "UNAUTHORIZED")
    assert ziti.mgmt("GET", "/current-identity", headers=bearer(token)).status_code == 200


def test_api_session_operations_still_need_an_api_session(
    ziti, make_signer, make_identity, key, ziti_clock, ziti_unique
):
    _, issuer = make_signer()
    name = ziti_unique("jwt-nosession")
    make_identity(name, externalId=name)
    token = key.token(claims(issuer, name, ziti_clock))
    for method in ("GET", "DELETE"):
        response = ziti.edge(method, "/current-api-session", headers=bearer(token))
        assert_error(response, 401, "UNAUTHORIZED")
        assert response.headers["www-authenticate"] == MISSING


def test_a_policy_without_ext_jwt_primary_or_another_signer_refuses_it(
    ziti, ziti_admin, make_signer, make_identity, key, ziti_clock, ziti_unique
):
    signer_id, issuer = make_signer()
    other_id, _ = make_signer()
    no_jwt = auth_policy_body(ziti_unique("nojwt"))
    no_jwt["primary"]["extJwt"]["allowed"] = False
    only_other = auth_policy_body(ziti_unique("other"))
    only_other["primary"]["extJwt"]["allowedSigners"] = [other_id]
    for body in (no_jwt, only_other):
        name = ziti_unique("refused")
        make_identity(name, externalId=name, authPolicyId=ziti_admin.create("auth-policies", body))
        response = ziti.edge("GET", "/current-identity", headers=bearer(key.token(claims(issuer, name, ziti_clock))))
        assert_error(response, 401, "UNAUTHORIZED")
        assert response.headers["www-authenticate"] == MISSING
    assert signer_id


def test_disabled_identity_unknown_subject_or_disabled_signer_is_refused(
    ziti, ziti_admin, make_signer, make_identity, key, ziti_clock, ziti_unique
):
    signer_id, issuer = make_signer()
    name = ziti_unique("jwt-locked")
    identity_id = make_identity(name, externalId=name)
    token = key.token(claims(issuer, name, ziti_clock))
    assert ziti.edge("GET", "/current-identity", headers=bearer(token)).status_code == 200
    ziti_admin.mgmt_ok("POST", f"/identities/{identity_id}/disable", json={"durationMinutes": 5})
    assert_error(ziti.edge("GET", "/current-identity", headers=bearer(token)), 401, "UNAUTHORIZED")
    ziti_admin.mgmt_ok("POST", f"/identities/{identity_id}/enable")
    unknown = key.token(claims(issuer, ziti_unique("nobody"), ziti_clock))
    assert_error(ziti.edge("GET", "/current-identity", headers=bearer(unknown)), 401, "UNAUTHORIZED")
    ziti_admin.mgmt_ok("PATCH", f"/external-jwt-signers/{signer_id}", json={"enabled": False})
    assert_error(ziti.edge("GET", "/current-identity", headers=bearer(token)), 401, "UNAUTHORIZED")


def test_a_jwt_expires_by_the_controller_clock(ziti, make_signer, make_identity, key, ziti_clock, ziti_unique):
    _, issuer = make_signer()
    name = ziti_unique("jwt-clock")
    make_identity(name, externalId=name)
    token = key.token(claims(issuer, name, ziti_clock, lifetime=60))
    assert ziti.edge("GET", "/current-identity", headers=bearer(token)).status_code == 200
    ziti_clock.advance(seconds=60)
    assert_error(ziti.edge("GET", "/current-identity", headers=bearer(token)), 401, "UNAUTHORIZED")


def test_an_identity_with_totp_owes_it_and_is_refused(
    ziti, ziti_admin, make_signer, make_identity, key, ziti_clock, ziti_unique
):
    _, issuer = make_signer()
    name = ziti_unique("jwt-totp")
    make_identity(name, externalId=name, password="pass-word", username=name)
    session = ziti.signed_in(name, "pass-word", api="client")
    session.edge_ok("POST", "/current-identity/mfa")
    secret = secret_of(session.edge_ok("GET", "/current-identity/mfa")["provisioningUrl"])
    session.edge_ok("POST", "/current-identity/mfa/verify", json={"code": code(secret, ziti_clock)})
    token = key.token(claims(issuer, name, ziti_clock))
    assert_error(ziti.edge("GET", "/current-identity", headers=bearer(token)), 401, "UNAUTHORIZED")


def test_a_bearer_that_is_not_a_jwt_is_an_invalid_oidc_token(ziti):
    response = ziti.edge("GET", "/current-identity", headers=bearer("not-a-jwt"))
    assert_error(response, 401, "UNAUTHORIZED")
    assert response.headers["www-authenticate"].startswith('Bearer realm="openziti-oidc" error="invalid"')
