"""Authenticators, authentication policies, API sessions and informational routes."""

from __future__ import annotations

from tests.support import assert_error, auth_policy_body, login


def test_authenticator_crud_never_returns_secrets(ziti, ziti_admin, make_identity):
    identity_id = make_identity()
    auth_id = ziti_admin.create(
        "authenticators",
        {"identityId": identity_id, "method": "updb", "username": "crud-user", "password": "first-pass"},
    )
    detail = ziti_admin.mgmt("GET", f"/authenticators/{auth_id}")
    assert detail.status_code == 200 and "hash" not in detail.text and "salt" not in detail.text
    data = detail.json()["data"]
    assert data["method"] == "updb" and data["username"] == "crud-user" and data["identity"]["id"] == identity_id
    ziti_admin.mgmt_ok("PUT", f"/authenticators/{auth_id}", json={"username": "crud-user2", "password": "second-pass"})
    assert login(ziti, "crud-user2", "second-pass").status_code == 200
    ziti_admin.mgmt_ok("PATCH", f"/authenticators/{auth_id}", json={"password": "third-pass"})
    assert login(ziti, "crud-user2", "third-pass").status_code == 200
    ziti_admin.mgmt_ok("DELETE", f"/authenticators/{auth_id}")
    assert login(ziti, "crud-user2", "third-pass").status_code == 401


def test_one_authenticator_per_method(ziti_admin, make_identity):
    identity_id = make_identity(password="pass-word", username="one-only")
    response = ziti_admin.mgmt(
        "POST",
        "/authenticators",
        json={"identityId": identity_id, "method": "updb", "username": "second", "password": "pass-word"},
    )
    assert_error(response, 409, "MAX_AUTHENTICATOR_METHODS_REACHED")


def test_duplicate_username_is_400(ziti_admin, make_identity):
    make_identity(password="pass-word", username="dupe-user")
    response = ziti_admin.mgmt(
        "POST",
        "/authenticators",
        json={"identityId": make_identity(), "method": "updb", "username": "dupe-user", "password": "pass-word"},
    )
    assert_error(response, 400, "COULD_NOT_VALIDATE", "username")


def test_unknown_authenticator_method_is_400(ziti_admin, make_identity):
    response = ziti_admin.mgmt(
        "POST", "/authenticators", json={"identityId": make_identity(), "method": "carrier-pigeon"}
    )
    assert_error(response, 400, "COULD_NOT_VALIDATE", "method")


def test_password_rules_of_the_policy_apply(ziti_admin, make_identity, ziti_unique):
    body = auth_policy_body(ziti_unique("strict"))
    body["primary"]["updb"].update(minPasswordLength=8, requireNumberChar=True)
    policy_id = ziti_admin.create("auth-policies", body)
    identity_id = make_identity(authPolicyId=policy_id)
    for weak in ("short1", "longbutnonumber"):
        response = ziti_admin.mgmt(
            "POST",
            "/authenticators",
            json={"identityId": identity_id, "method": "updb", "username": ziti_unique("u"), "password": weak},
        )
        assert_error(response, 400, "COULD_NOT_VALIDATE", "password")
    assert (
        ziti_admin.mgmt(
            "POST",
            "/authenticators",
            json={
                "identityId": identity_id,
                "method": "updb",
                "username": ziti_unique("u"),
                "password": "longer-pass-1",
            },
        ).status_code
        == 201
    )


def test_auth_policy_crud_and_patch_merges_nested(ziti_admin, ziti_unique):
    policy_id = ziti_admin.create("auth-policies", auth_policy_body(ziti_unique("pol")))
    ziti_admin.mgmt_ok(
        "PATCH",
        f"/auth-policies/{policy_id}",
        json={"primary": {"updb": {"maxAttempts": 4}}, "secondary": {"requireTotp": True}},
    )
    data = ziti_admin.mgmt_ok("GET", f"/auth-policies/{policy_id}")
    assert data["primary"]["updb"]["maxAttempts"] == 4 and data["primary"]["updb"]["allowed"] is True
    assert data["primary"]["cert"] == {"allowed": True, "allowExpiredCerts": True}
    assert data["secondary"] == {"requireTotp": True, "requireExtJwtSigner": None}
    replaced = auth_policy_body(ziti_unique("pol2"))
    ziti_admin.mgmt_ok("PUT", f"/auth-policies/{policy_id}", json=replaced)
    assert ziti_admin.mgmt_ok("GET", f"/auth-policies/{policy_id}")["secondary"]["requireTotp"] is False
    ziti_admin.mgmt_ok("DELETE", f"/auth-policies/{policy_id}")
    assert ziti_admin.mgmt("GET", f"/auth-policies/{policy_id}").status_code == 404


def test_auth_policy_requires_primary_and_secondary(ziti_admin, ziti_unique):
    assert_error(ziti_admin.mgmt("POST", "/auth-policies", json={"name": ziti_unique()}), 400, "COULD_NOT_VALIDATE")


def test_auth_policy_in_use_cannot_be_deleted(ziti_admin, make_identity, ziti_unique):
    policy_id = ziti_admin.create("auth-policies", auth_policy_body(ziti_unique("used")))
    identity_id = make_identity(authPolicyId=policy_id)
    error = assert_error(
        ziti_admin.mgmt("DELETE", f"/auth-policies/{policy_id}"), 409, "CAN_NOT_DELETE_REFERENCED_ENTITY"
    )
    assert identity_id in error["cause"]["value"]


def test_default_auth_policy_is_bootstrapped(ziti_admin):
    data = ziti_admin.mgmt_ok("GET", "/auth-policies/default")
    assert data["name"] == "Default"
    assert data["primary"]["updb"] == {
        "allowed": True,
        "lockoutDurationMinutes": 0,
        "maxAttempts": 0,
        "minPasswordLength": 5,
        "requireMixedCase": False,
        "requireNumberChar": False,
        "requireSpecialChar": False,
    }
    assert data["primary"]["cert"] == {"allowed": True, "allowExpiredCerts": True}
    assert data["secondary"] == {"requireExtJwtSigner": None, "requireTotp": False}


def test_api_sessions_list_get_delete(ziti, ziti_admin, make_identity):
    identity_id = make_identity(password="pass-word", username="sess-user")
    session = ziti.signed_in("sess-user", "pass-word")
    listed = ziti_admin.mgmt_ok("GET", "/api-sessions", params={"filter": f'token = "{session.token}"'})
    assert len(listed) == 1 and "expiresAt" not in listed[0]
    detail = ziti_admin.mgmt_ok("GET", f"/api-sessions/{listed[0]['id']}")
    assert detail["identity"]["id"] == identity_id and detail["identityId"] == identity_id
    ziti_admin.mgmt_ok("DELETE", f"/api-sessions/{listed[0]['id']}")
    assert session.mgmt("GET", "/current-identity").status_code == 401


def test_summary_counts_entities(ziti_admin, make_identity):
    before = ziti_admin.mgmt_ok("GET", "/summary")
    make_identity()
    after = ziti_admin.mgmt_ok("GET", "/summary")
    assert after["identities"] == before["identities"] + 1
    assert after["configTypes"] == 8 and after["postureCheckTypes"] == 5 and after["identityTypes"] == 2


def test_informational_routes(ziti, ziti_admin):
    assert ziti.edge_ok("GET", "/enumerated-capabilities") == ["OIDC_AUTH", "HA_CONTROLLER", "OIDC_AUTH_WITH_CSR"]
    assert "address" in ziti.edge_ok("GET", "/protocols")["https"]
    controllers = ziti_admin.mgmt_ok("GET", "/controllers")
    assert (
        len(controllers) == 1
        and controllers[0]["isOnline"] is True
        and controllers[0]["certPem"].startswith("-----BEGIN")
    )


def test_built_in_config_types_have_real_ids(ziti_app):
    store = ziti_app.controller.store
    assert store.get("config_types", "g7cIWbcGg")["name"] == "intercept.v1"
    assert store.get("config_types", "NH5p4FpGR")["name"] == "host.v1"
    assert store.get("config_types", "f2dd2df0-9c04-4b84-a91e-71437ac229f1")["name"] == "ziti-tunneler-client.v1"
