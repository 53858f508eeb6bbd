"""Authentication policies enforced on every primary method and on the second factors."""

from __future__ import annotations

import pytest

from harness.client import ApiError
from tests.api.jwt_support import SigningKey, claims, ext_jwt_login, signer_body
from tests.support import TOTP_QUERY, assert_error, auth_policy_body, cert_login, code, enrolled, login, ok, secret_of


@pytest.fixture(scope="module")
def key():
    return SigningKey("policy-kid")


@pytest.fixture
def make_signer(ziti_admin, jwks_server, key, ziti_unique):
    """Create an enabled JWKS signer; return ``(signer id, issuer)``."""

    def make():
        name = ziti_unique("psigner")
        issuer = f"https://{name}.example"
        jwks = jwks_server.publish(f"/{name}/jwks", key)
        return ziti_admin.create("external-jwt-signers", signer_body(name, issuer, jwks=jwks)), issuer

    return make


@pytest.fixture
def make_policy_for(ziti_admin, ziti_unique):
    """Create a policy from ``auth_policy_body`` after ``edit(body)``; return its id."""

    def make(edit):
        body = auth_policy_body(ziti_unique("pol"))
        edit(body)
        return ziti_admin.create("auth-policies", body)

    return make


def person(make_identity, unique, policy_id, username):
    return make_identity(unique("pp"), password="pass-word", username=username, authPolicyId=policy_id)


# -- primary methods ----------------------------------------------------------------------


def test_password_rules_of_the_policy_apply_when_passwords_are_set(ziti_admin, make_identity, make_policy_for):
    def strict(body):
        body["primary"]["updb"].update(
            minPasswordLength=8, requireNumberChar=True, requireMixedCase=True, requireSpecialChar=True
        )

    identity_id = make_identity(authPolicyId=make_policy_for(strict))
    for weak in ("Sh0rt!", "nonumbers!A", "N0SPECIAL1a", "alllower1!"):
        response = ziti_admin.mgmt(
            "POST",
            "/authenticators",
            json={"identityId": identity_id, "method": "updb", "username": "strict-user", "password": weak},
        )
        assert_error(response, 400, "COULD_NOT_VALIDATE", "password")
    assert ziti_admin.create(
        "authenticators",
        {"identityId": identity_id, "method": "updb", "username": "strict-user", "password": "Str0ng!pass"},
    )


def test_updb_disallowed_refuses_password_but_not_ext_jwt(
    ziti, make_identity, make_policy_for, make_signer, key, ziti_clock, ziti_unique
):
    signer_id, issuer = make_signer()
    policy_id = make_policy_for(lambda b: b["primary"]["updb"].update(allowed=False))
    identity_id = person(make_identity, ziti_unique, policy_id, "no-updb-user")
    assert_error(login(ziti, "no-updb-user", "pass-word"), 401, "INVALID_AUTH")
    assert ext_jwt_login(ziti, key.token(claims(issuer, identity_id, ziti_clock))).status_code == 200


def test_ext_jwt_disallowed_refuses_tokens_but_not_passwords(
    ziti, make_identity, make_policy_for, make_signer, key, ziti_clock, ziti_unique
):
    _, issuer = make_signer()
    policy_id = make_policy_for(lambda b: b["primary"]["extJwt"].update(allowed=False))
    identity_id = person(make_identity, ziti_unique, policy_id, "no-jwt-user")
    response = ext_jwt_login(ziti, key.token(claims(issuer, identity_id, ziti_clock)))
    assert_error(response, 401, "UNAUTHORIZED")
    assert 'realm="openziti-primary-ext-jwt"' in response.headers["www-authenticate"]
    assert login(ziti, "no-jwt-user", "pass-word").status_code == 200


def test_allowed_signers_limit_which_signers_log_in(
    ziti, make_identity, make_policy_for, make_signer, key, ziti_clock, ziti_unique
):
    (first_id, first_issuer), (_, second_issuer) = make_signer(), make_signer()
    policy_id = make_policy_for(lambda b: b["primary"]["extJwt"].update(allowedSigners=[first_id]))
    identity_id = person(make_identity, ziti_unique, policy_id, "listed-user")
    assert ext_jwt_login(ziti, key.token(claims(first_issuer, identity_id, ziti_clock))).status_code == 200
    assert_error(ext_jwt_login(ziti, key.token(claims(second_issuer, identity_id, ziti_clock))), 401, "UNAUTHORIZED")


# -- second factors ------------------------------------------------------------------------


def test_require_totp_without_enrollment_is_partial_until_enrolled_and_verified(
    ziti, make_identity, make_policy_for, ziti_clock, ziti_unique
):
    policy_id = make_policy_for(lambda b: b["secondary"].update(requireTotp=True))
    person(make_identity, ziti_unique, policy_id, "totp-required")
    session = ziti.signed_in("totp-required", "pass-word", api="client")
    data = session.edge_ok("GET", "/current-api-session")
    assert data["authQueries"] == [TOTP_QUERY] and data["isMfaRequired"] is False and data["isMfaComplete"] is False
    assert_error(session.edge("GET", "/current-identity"), 401, "UNAUTHORIZED")
    session.edge_ok("POST", "/current-identity/mfa")
    secret = secret_of(session.edge_ok("GET", "/current-identity/mfa")["provisioningUrl"])
    session.edge_ok("POST", "/current-identity/mfa/verify", json={"code": code(secret, ziti_clock)})
    data = session.edge_ok("GET", "/current-api-session")
    assert data["isMfaRequired"] is True and data["isMfaComplete"] is True and data["authQueries"] == []
    assert session.edge("GET", "/current-identity").status_code == 200


def test_a_policy_change_applies_to_live_sessions(ziti, ziti_admin, make_identity, make_policy_for, ziti_unique):
    policy_id = make_policy_for(lambda b: None)
    person(make_identity, ziti_unique, policy_id, "live-policy")
    session = ziti.signed_in("live-policy", "pass-word", api="client")
    assert session.edge("GET", "/current-identity").status_code == 200
    ziti_admin.mgmt_ok("PATCH", f"/auth-policies/{policy_id}", json={"secondary": {"requireTotp": True}})
    assert_error(session.edge("GET", "/current-identity"), 401, "UNAUTHORIZED")


def test_required_ext_jwt_signer_needs_a_bearer_on_every_request(
    ziti, make_identity, make_policy_for, make_signer, key, ziti_clock, ziti_unique
):
    signer_id, issuer = make_signer()
    policy_id = make_policy_for(lambda b: b["secondary"].update(requireExtJwtSigner=signer_id))
    identity_id = person(make_identity, ziti_unique, policy_id, "jwt-second")
    response = login(ziti, "jwt-second", "pass-word", "client")
    data = response.json()["data"]
    assert data["authQueries"] == [
        {
            "typeId": "EXT-JWT",
            "provider": "url",
            "httpUrl": "https://idp.example/auth",
            "clientId": "ziti-client",
            "scopes": ["openid"],
            "id": signer_id,
        }
    ]
    header = response.headers["www-authenticate"]
    assert header.startswith('Bearer realm="openziti-secondary-ext-jwt" error="missing"')
    assert f'id="{signer_id}"' in header and f'issuer="{issuer}"' in header
    session = ziti.with_token(data["token"])
    assert_error(session.edge("GET", "/current-identity"), 401, "UNAUTHORIZED")
    bearer = {"Authorization": f"Bearer {key.token(claims(issuer, identity_id, ziti_clock))}"}
    assert session.edge("GET", "/current-identity", headers=bearer).status_code == 200
    assert session.edge_ok("GET", "/current-api-session", headers=bearer)["authQueries"] == []


def test_a_bearer_for_another_identity_or_an_expired_one_does_not_count(
    ziti, make_identity, make_policy_for, make_signer, key, ziti_clock, ziti_unique
):
    signer_id, issuer = make_signer()
    policy_id = make_policy_for(lambda b: b["secondary"].update(requireExtJwtSigner=signer_id))
    identity_id = person(make_identity, ziti_unique, policy_id, "jwt-second-b")
    other = make_identity()
    session = ziti.signed_in("jwt-second-b", "pass-word", api="client")
    foreign = {"Authorization": f"Bearer {key.token(claims(issuer, other, ziti_clock))}"}
    assert_error(session.edge("GET", "/current-identity", headers=foreign), 401, "UNAUTHORIZED")
    short = {"Authorization": f"Bearer {key.token(claims(issuer, identity_id, ziti_clock, lifetime=60))}"}
    assert session.edge("GET", "/current-identity", headers=short).status_code == 200
    ziti_clock.advance(seconds=61)
    response = session.edge("GET", "/current-api-session", headers=short)
    assert 'error="expired"' in response.headers["www-authenticate"]
    assert_error(session.edge("GET", "/current-identity", headers=short), 401, "UNAUTHORIZED")


def test_a_bearer_sent_with_authenticate_counts(
    ziti, make_identity, make_policy_for, make_signer, key, ziti_clock, ziti_unique
):
    signer_id, issuer = make_signer()
    policy_id = make_policy_for(lambda b: b["secondary"].update(requireExtJwtSigner=signer_id))
    identity_id = person(make_identity, ziti_unique, policy_id, "jwt-second-c")
    bearer = {"Authorization": f"Bearer {key.token(claims(issuer, identity_id, ziti_clock))}"}
    response = ziti.edge(
        "POST",
        "/authenticate",
        params={"method": "password"},
        headers=bearer,
        json={"username": "jwt-second-c", "password": "pass-word"},
    )
    assert response.json()["data"]["authQueries"] == [] and "www-authenticate" not in response.headers


def test_totp_and_ext_jwt_factors_are_both_listed(ziti, make_identity, make_policy_for, make_signer, ziti_unique):
    signer_id, _ = make_signer()
    policy_id = make_policy_for(lambda b: b["secondary"].update(requireExtJwtSigner=signer_id, requireTotp=True))
    person(make_identity, ziti_unique, policy_id, "two-factors")
    data = login(ziti, "two-factors", "pass-word", "client").json()["data"]
    assert [q["typeId"] for q in data["authQueries"]] == ["MFA", "EXT-JWT"]


def test_second_factors_apply_to_ext_jwt_logins_too(
    ziti, make_identity, make_policy_for, make_signer, key, ziti_clock, ziti_unique
):
    _, issuer = make_signer()
    policy_id = make_policy_for(lambda b: b["secondary"].update(requireTotp=True))
    identity_id = person(make_identity, ziti_unique, policy_id, "jwt-then-totp")
    data = ext_jwt_login(ziti, key.token(claims(issuer, identity_id, ziti_clock))).json()["data"]
    assert data["authQueries"] == [TOTP_QUERY]
    assert_error(ziti.with_token(data["token"]).edge("GET", "/current-identity"), 401, "UNAUTHORIZED")


def test_second_factors_apply_to_certificate_logins(cert_admin, make_cert_api, ziti_unique):
    body = auth_policy_body(ziti_unique("cert-totp"))
    body["secondary"]["requireTotp"] = True
    policy_id = cert_admin.create("auth-policies", body)
    _, client = enrolled(cert_admin, make_cert_api(), ziti_unique("cert-totp"), authPolicyId=policy_id)
    data = ok(cert_login(make_cert_api(client)))
    assert data["authQueries"] == [TOTP_QUERY] and data["isMfaComplete"] is False
    assert_error(make_cert_api().with_token(data["token"]).edge("GET", "/current-identity"), 401, "UNAUTHORIZED")


# -- references ------------------------------------------------------------------------------


def test_deleting_a_policy_in_use_is_409_until_no_identity_uses_it(ziti_admin, make_identity, make_policy_for):
    policy_id = make_policy_for(lambda b: None)
    identity_id = make_identity(authPolicyId=policy_id)
    error = assert_error(
        ziti_admin.mgmt("DELETE", f"/auth-policies/{policy_id}"), 409, "CAN_NOT_DELETE_REFERENCED_ENTITY"
    )
    assert identity_id in error["cause"]["value"]
    ziti_admin.mgmt_ok("PATCH", f"/identities/{identity_id}", json={"authPolicyId": "default"})
    assert ziti_admin.mgmt("DELETE", f"/auth-policies/{policy_id}").status_code == 200


@pytest.mark.parametrize("where", ["allowedSigners", "requireExtJwtSigner"])
def test_deleting_a_signer_a_policy_uses_is_409(ziti_admin, make_policy_for, make_signer, where):
    signer_id, _ = make_signer()

    def edit(body):
        if where == "allowedSigners":
            body["primary"]["extJwt"]["allowedSigners"] = [signer_id]
        else:
            body["secondary"]["requireExtJwtSigner"] = signer_id

    policy_id = make_policy_for(edit)
    response = ziti_admin.mgmt("DELETE", f"/external-jwt-signers/{signer_id}")
    assert assert_error(response, 409, "CAN_NOT_DELETE_REFERENCED_ENTITY")["cause"]["value"] == policy_id
    ziti_admin.mgmt_ok("DELETE", f"/auth-policies/{policy_id}")
    assert ziti_admin.mgmt("DELETE", f"/external-jwt-signers/{signer_id}").status_code == 200


def test_a_policy_naming_an_unknown_signer_is_404(ziti_admin, make_policy_for):
    with pytest.raises(ApiError) as caught:
        make_policy_for(lambda b: b["primary"]["extJwt"].update(allowedSigners=["no-such-signer"]))
    assert caught.value.status == 404 and caught.value.code == "NOT_FOUND"
