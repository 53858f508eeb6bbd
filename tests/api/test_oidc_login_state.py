"""What an OIDC login keeps between its steps: the auth requests in memory, one identity write, the signing key's tokens."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.app import create_app
from controller.config import Config
from controller.oidc import requests as auth_requests
from harness.client import ZitiClient
from tests.flows.oidc_support import password_identity, password_login, start, ziti_error

SDK_INFO = {"type": "ziti-sdk-c", "version": "1.18.3", "appId": "bench"}
ENV_INFO = {"os": "linux", "arch": "x86_64"}


@pytest.fixture
def user(ziti_admin, ziti_unique):
    name = ziti_unique("oidc-state")
    return password_identity(ziti_admin, name), name


def test_sdk_info_is_written_once_per_login_not_again_by_the_callback(raw, ziti_admin, user, ziti_clock):
    request_id, _ = start(raw, method="password")
    reply = raw.post(
        "/oidc/login/password",
        params={"id": request_id},
        json={"username": user[1], "password": "s3cret-pw", "sdkInfo": SDK_INFO, "envInfo": ENV_INFO},
    )
    assert reply.status_code == 302, reply.text
    after_login = ziti_admin.management.detail_identity(user[0])
    assert after_login["sdkInfo"]["type"] == "ziti-sdk-c" and after_login["envInfo"]["os"] == "linux"
    ziti_clock.advance(seconds=5)
    callback = raw.get("/oidc/authorize/callback", params={"id": request_id})
    assert callback.status_code == 302 and "code=" in callback.headers["location"]
    assert ziti_admin.management.detail_identity(user[0])["updatedAt"] == after_login["updatedAt"]


def _login_with_info(raw, style: str, username: str, sdk_info: dict, env_info: dict) -> None:
    body = {"username": username, "password": "s3cret-pw", "sdkInfo": sdk_info, "envInfo": env_info}
    if style == "legacy":
        reply = raw.post("/edge/client/v1/authenticate", params={"method": "password"}, json=body)
        assert reply.status_code == 200, reply.text
        return
    request_id, _ = start(raw, method="password")
    reply = raw.post("/oidc/login/password", params={"id": request_id}, json=body)
    assert reply.status_code == 302, reply.text


@pytest.mark.parametrize("style", ["legacy", "oidc"])
@pytest.mark.parametrize("changed", ["sdkInfo", "envInfo"])
def test_a_login_writes_the_identity_only_when_its_sdk_or_env_info_changed(
    raw, ziti_admin, user, ziti_clock, style, changed
):
    """As the real controller: the same info again leaves the identity alone; a changed one is stored."""
    _login_with_info(raw, style, user[1], SDK_INFO, ENV_INFO)
    first = ziti_admin.management.detail_identity(user[0])
    assert first["sdkInfo"] == SDK_INFO and first["envInfo"] == ENV_INFO
    ziti_clock.advance(seconds=5)
    _login_with_info(raw, style, user[1], dict(SDK_INFO), dict(ENV_INFO))
    again = ziti_admin.management.detail_identity(user[0])
    assert again["updatedAt"] == first["updatedAt"]
    assert (again["sdkInfo"], again["envInfo"]) == (SDK_INFO, ENV_INFO)
    ziti_clock.advance(seconds=5)
    sdk_info = {**SDK_INFO, "version": "1.19.0"} if changed == "sdkInfo" else SDK_INFO
    env_info = {**ENV_INFO, "osRelease": "6.2"} if changed == "envInfo" else ENV_INFO
    _login_with_info(raw, style, user[1], sdk_info, env_info)
    after = ziti_admin.management.detail_identity(user[0])
    assert after["updatedAt"] > first["updatedAt"]
    assert (after["sdkInfo"], after["envInfo"]) == (sdk_info, env_info)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(state=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40))
def test_the_callback_returns_any_state_exactly_beside_the_code(raw, user, state):
    request_id, _ = start(raw, method="password", state=state)
    assert password_login(raw, request_id, user[1], "s3cret-pw").status_code == 302
    location = raw.get("/oidc/authorize/callback", params={"id": request_id}).headers["location"]
    query = parse_qs(urlsplit(location).query, keep_blank_values=True)
    assert query["state"] == [state] and len(query["code"]) == 1 and list(query) == ["code", "state"]


def test_auth_requests_are_bounded_oldest_first(raw, user, monkeypatch):
    monkeypatch.setattr(auth_requests, "MAX_LIVE", 3)
    ids = [start(raw, method="password")[0] for _ in range(4)]
    ziti_error(password_login(raw, ids[0], user[1], "s3cret-pw"), 401, "UNAUTHORIZED")
    assert password_login(raw, ids[1], user[1], "s3cret-pw").status_code == 302


def test_an_expired_request_behind_a_newer_one_is_gone(raw, user, ziti_clock):
    """A clock set back leaves an older request after a newer one; it still expires on time."""
    newer, _ = start(raw, method="password")
    ziti_clock.advance(minutes=-5)
    older, _ = start(raw, method="password")
    ziti_clock.advance(minutes=11)  # 6 minutes after ``newer``, 11 after ``older``
    ziti_error(password_login(raw, older, user[1], "s3cret-pw"), 401, "UNAUTHORIZED")
    assert password_login(raw, newer, user[1], "s3cret-pw").status_code == 302


@pytest.mark.parametrize("key_type, alg", [("rsa", "RS256"), ("ec", "ES256")])
def test_access_and_id_tokens_of_either_server_key_verify_by_the_jwks_and_serve_as_bearer(key_type, alg):
    app = create_app(Config(server_key_type=key_type))
    try:
        with ZitiClient.in_process(app) as client:
            client.login("admin", "admin", oidc="c")
            keys = {key["kid"]: key for key in client.http.get("/oidc/keys").json()["keys"]}
            for token in (client.oidc.access_token, client.oidc.id_token):
                header = jwt.get_unverified_header(token)
                assert header == {"alg": alg, "kid": header["kid"], "typ": "JWT"}
                key = jwt.PyJWK(keys[header["kid"]]).key
                jwt.decode(token, key, algorithms=[alg], options={"verify_aud": False})
            # The refresh token is this controller's own HS256 MAC (docs/architecture.md, "OIDC tokens"):
            # its kid is not in the JWKS and no published key verifies it.
            header = jwt.get_unverified_header(client.oidc.refresh_token)
            assert header["alg"] == "HS256" and header["kid"] not in keys
            for published in keys.values():
                with pytest.raises(jwt.PyJWTError):
                    jwt.decode(client.oidc.refresh_token, jwt.PyJWK(published).key, algorithms=[alg])
            assert client.edge.get_current_identity()["name"] == "Default Admin"
            token = client.oidc.access_token
            tampered = token[:-4] + ("BBBB" if token.endswith("AAAA") else "AAAA")
        with ZitiClient.in_process(app) as anonymous:
            for presented, status in ((tampered, 401), (token, 200)):
                reply = anonymous.http.get(
                    "/edge/client/v1/current-identity", headers={"Authorization": f"Bearer {presented}"}
                )
                assert reply.status_code == status, reply.text
    finally:
        app.controller.close()
