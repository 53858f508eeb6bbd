"""Password login, API sessions, expiry, lockout, disable and enable."""

from __future__ import annotations

import pytest

from controller.config import Config
from tests.support import assert_error, auth_policy_body, login


@pytest.mark.parametrize("api_name", ["management", "client"])
def test_password_login_returns_session_and_headers(ziti, api_name):
    response = login(ziti, "admin", "admin", api_name)
    assert response.status_code == 200
    data = response.json()["data"]
    assert response.headers["zt-session"] == data["token"]
    assert response.headers["expiration-seconds"] == "1800"
    assert response.headers["expires-at"].endswith(" +0000 UTC")
    assert data["expirationSeconds"] == 1800
    assert data["authQueries"] == [] and data["isMfaRequired"] is False and data["isMfaComplete"] is False
    assert data["identity"]["entity"] == "identities" and data["identity"]["name"] == "Default Admin"
    assert data["id"].startswith("c") and len(data["id"]) == 25


def test_token_is_accepted_in_zt_session_and_net_session(ziti):
    token = login(ziti, "admin", "admin").json()["data"]["token"]
    for header in ("zt-session", "net-session"):
        response = ziti.mgmt("GET", "/current-identity", headers={header: token})
        assert response.status_code == 200
        assert response.json()["data"]["isDefaultAdmin"] is True


def test_bearer_token_is_not_a_session(ziti):
    token = login(ziti, "admin", "admin").json()["data"]["token"]
    response = ziti.mgmt("GET", "/current-identity", headers={"Authorization": f"Bearer {token}"})
    assert_error(response, 401, "UNAUTHORIZED")


@pytest.mark.parametrize("username, password", [("admin", "wrong-password"), ("nobody", "whatever")])
def test_wrong_credentials_are_401_invalid_auth(ziti, username, password):
    assert_error(login(ziti, username, password), 401, "INVALID_AUTH")


@pytest.mark.parametrize("body", [{}, {"username": "admin"}, {"password": "admin"}])
def test_missing_username_or_password_is_400(ziti, body):
    response = ziti.mgmt("POST", "/authenticate", params={"method": "password"}, json=body)
    assert_error(response, 400, "COULD_NOT_VALIDATE")


@pytest.mark.parametrize(
    "body, field",
    [
        ({"username": "abc", "password": "admin"}, "username"),
        ({"username": "admin", "password": "abcd"}, "password"),
        ({"username": "a" * 101, "password": "admin"}, "username"),
    ],
)
def test_out_of_range_lengths_are_400(ziti, body, field):
    response = ziti.mgmt("POST", "/authenticate", params={"method": "password"}, json=body)
    assert_error(response, 400, "COULD_NOT_VALIDATE", field)


def test_unknown_method_is_400(ziti):
    response = ziti.mgmt("POST", "/authenticate", params={"method": "telepathy"}, json={})
    assert_error(response, 400, "COULD_NOT_VALIDATE", "method")


def test_authenticate_keeps_env_and_sdk_info(ziti, ziti_admin, make_identity):
    identity_id = make_identity(password="secret-1", username="envuser")
    ziti.mgmt(
        "POST",
        "/authenticate",
        params={"method": "password"},
        json={
            "username": "envuser",
            "password": "secret-1",
            "envInfo": {"os": "linux", "arch": "amd64"},
            "sdkInfo": {"type": "ziti-sdk-c", "version": "1.18.0", "appID": "x"},
        },
    )
    data = ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")
    assert data["envInfo"]["os"] == "linux" and data["sdkInfo"]["type"] == "ziti-sdk-c"
    assert data["hasApiSession"] is True


def test_current_api_session_and_logout(ziti):
    session = ziti.signed_in("admin", "admin")  # no re-login on 401, unlike ziti_admin
    data = session.mgmt_ok("GET", "/current-api-session")
    assert data["token"] == session.token and "expiresAt" in data
    assert session.mgmt("DELETE", "/current-api-session").json() == {"data": {}, "meta": {}}
    response = session.mgmt("GET", "/current-api-session")
    error = assert_error(response, 401, "UNAUTHORIZED")
    assert 'error="invalid"' in response.headers["www-authenticate"]
    assert error["message"].startswith("The request could not be completed")


def test_missing_token_names_both_realms(ziti):
    response = ziti.mgmt("GET", "/current-identity")
    assert_error(response, 401, "UNAUTHORIZED")
    assert 'error="missing"' in response.headers["www-authenticate"]
    assert "openziti-oidc" in response.headers["www-authenticate"]


def test_session_expires_after_inactivity_and_activity_slides_it(ziti, ziti_clock):
    session = ziti.signed_in("admin", "admin")  # no re-login on 401, unlike ziti_admin
    ziti_clock.advance(minutes=29)
    assert session.mgmt("GET", "/current-identity").status_code == 200
    ziti_clock.advance(minutes=29)
    assert session.mgmt("GET", "/current-identity").status_code == 200
    ziti_clock.advance(minutes=30, seconds=1)
    assert_error(session.mgmt("GET", "/current-identity"), 401, "UNAUTHORIZED")


@pytest.mark.parametrize("ziti_config", [Config(session_timeout_seconds=120)], ids=["2-minutes"])
def test_session_timeout_is_configurable(ziti, ziti_clock):
    session = ziti.signed_in("admin", "admin")
    assert session.mgmt_ok("GET", "/current-api-session")["expirationSeconds"] == 120
    ziti_clock.advance(seconds=121)
    assert session.mgmt("GET", "/current-identity").status_code == 401


def test_expired_sessions_leave_the_api_session_list(ziti_admin, ziti, ziti_clock):
    other = ziti.signed_in("admin", "admin")
    ziti_clock.advance(minutes=31)
    fresh = ziti.signed_in("admin", "admin")
    ids = {s["id"] for s in fresh.mgmt_ok("GET", "/api-sessions", params={"limit": 500})}
    other_id = other.token
    assert not any(s["token"] == other_id for s in fresh.mgmt_ok("GET", "/api-sessions", params={"limit": 500}))
    assert ids


def test_lockout_after_max_attempts_then_unlock_after_duration(
    ziti, ziti_admin, make_identity, ziti_clock, ziti_unique
):
    policy_id = ziti_admin.create("auth-policies", auth_policy_body(ziti_unique("lock"), max_attempts=3, lockout=10))
    make_identity(password="right-pass", username="lockme", authPolicyId=policy_id)
    for _ in range(3):
        assert_error(login(ziti, "lockme", "wrong-pass"), 401, "INVALID_AUTH")
    # locked: even the right password gets the same answer
    assert_error(login(ziti, "lockme", "right-pass"), 401, "INVALID_AUTH")
    ziti_clock.advance(minutes=10, seconds=1)
    assert login(ziti, "lockme", "right-pass").status_code == 200


def test_success_resets_the_failure_count(ziti, ziti_admin, make_identity, ziti_unique):
    policy_id = ziti_admin.create("auth-policies", auth_policy_body(ziti_unique("reset"), max_attempts=2, lockout=10))
    make_identity(password="right-pass", username="resetme", authPolicyId=policy_id)
    login(ziti, "resetme", "wrong-pass")
    assert login(ziti, "resetme", "right-pass").status_code == 200
    login(ziti, "resetme", "wrong-pass")
    assert login(ziti, "resetme", "right-pass").status_code == 200


def test_lockout_duration_zero_locks_until_enabled(ziti, ziti_admin, make_identity, ziti_clock, ziti_unique):
    policy_id = ziti_admin.create("auth-policies", auth_policy_body(ziti_unique("forever"), max_attempts=1, lockout=0))
    identity_id = make_identity(password="right-pass", username="foreverme", authPolicyId=policy_id)
    login(ziti, "foreverme", "wrong-pass")
    ziti_clock.advance(days=365)
    assert_error(login(ziti, "foreverme", "right-pass"), 401, "INVALID_AUTH")
    ziti_admin = ziti.signed_in("admin", "admin")  # the year also expired the admin's session
    detail = ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")
    assert detail["disabled"] is True and detail["disabledUntil"] is None
    ziti_admin.mgmt_ok("POST", f"/identities/{identity_id}/enable")
    assert login(ziti, "foreverme", "right-pass").status_code == 200


def test_disable_for_minutes_rejects_login_and_live_sessions(ziti, ziti_admin, make_identity, ziti_clock):
    identity_id = make_identity(password="pass-word", username="disableme")
    session = ziti.signed_in("disableme", "pass-word")
    ziti_admin.mgmt_ok("POST", f"/identities/{identity_id}/disable", json={"durationMinutes": 5})
    assert session.mgmt("GET", "/current-identity").status_code == 401
    assert_error(login(ziti, "disableme", "pass-word"), 401, "INVALID_AUTH")
    detail = ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")
    assert detail["disabled"] is True and detail["disabledUntil"] is not None
    ziti_clock.advance(minutes=5, seconds=1)
    assert login(ziti, "disableme", "pass-word").status_code == 200
    assert ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")["disabled"] is False


def test_disable_requires_duration(ziti_admin, make_identity):
    response = ziti_admin.mgmt("POST", f"/identities/{make_identity()}/disable", json={})
    assert_error(response, 400, "COULD_NOT_VALIDATE", "durationMinutes")


def test_updb_not_allowed_by_policy_is_invalid_auth(ziti, ziti_admin, make_identity, ziti_unique):
    body = auth_policy_body(ziti_unique("noupdb"))
    body["primary"]["updb"]["allowed"] = False
    policy_id = ziti_admin.create("auth-policies", body)
    make_identity(password="pass-word", username="noupdb", authPolicyId=policy_id)
    assert_error(login(ziti, "noupdb", "pass-word"), 401, "INVALID_AUTH")


def test_change_own_password_requires_current_password(ziti, make_identity):
    make_identity(password="old-pass", username="changer")
    session = ziti.signed_in("changer", "old-pass")
    auth_id = session.mgmt_ok("GET", "/current-identity/authenticators")[0]["id"]
    response = session.mgmt(
        "PATCH",
        f"/current-identity/authenticators/{auth_id}",
        json={"password": "new-pass", "currentPassword": "wrong-one"},
    )
    assert_error(response, 401, "UNAUTHORIZED", "currentPassword")
    assert (
        session.mgmt(
            "PATCH",
            f"/current-identity/authenticators/{auth_id}",
            json={"password": "new-pass", "currentPassword": "old-pass"},
        ).status_code
        == 200
    )
    assert login(ziti, "changer", "new-pass").status_code == 200
    assert login(ziti, "changer", "old-pass").status_code == 401


def test_own_authenticators_hide_password_hashes(ziti, make_identity):
    make_identity(password="pass-word", username="hashless")
    session = ziti.signed_in("hashless", "pass-word")
    listed = session.mgmt("GET", "/current-identity/authenticators").text
    assert "password" not in listed.lower().replace("passwordless", "") and "salt" not in listed


def test_someone_elses_authenticator_is_404(ziti, ziti_admin, make_identity):
    make_identity(password="pass-word", username="nosy-one")
    session = ziti.signed_in("nosy-one", "pass-word")
    admin_auth = ziti_admin.mgmt_ok("GET", "/current-identity/authenticators")[0]["id"]
    assert_error(session.mgmt("GET", f"/current-identity/authenticators/{admin_auth}"), 404, "NOT_FOUND")
