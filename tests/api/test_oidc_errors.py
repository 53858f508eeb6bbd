"""Every error of the OIDC endpoints, as the real controller answers it (bare Ziti errors or OAuth errors)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from harness.client import ZitiClient
from harness.client import pki as hp
from harness.client.oidc import GO_REDIRECT, OidcTokens
from harness.dataplane import flows
from tests.flows.oidc_support import (
    TOKEN,
    bearer,
    code_of,
    enrolled_identity,
    exchange,
    oauth_error,
    password_identity,
    password_login,
    password_tokens,
    refresh,
    start,
    ziti_error,
)


@pytest.fixture
def user(ziti_admin, ziti_unique):
    name = ziti_unique("oidc-err")
    return password_identity(ziti_admin, name), name


# -- login endpoints: bare Ziti errors -------------------------------------------------


def test_wrong_password_and_unknown_user_are_invalid_auth(raw, user):
    request_id, _ = start(raw, method="password")
    body = ziti_error(password_login(raw, request_id, user[1], "wrong-pw"), 401, "INVALID_AUTH")
    assert body["message"] == "The authentication request failed"
    ziti_error(password_login(raw, request_id, "nobody-here", "wrong-pw"), 401, "INVALID_AUTH")


def test_disabled_identity_is_invalid_auth(raw, ziti_admin, user):
    ziti_admin.management.disable_identity(user[0], body={"durationMinutes": 0})
    request_id, _ = start(raw, method="password")
    ziti_error(password_login(raw, request_id, user[1], "s3cret-pw"), 401, "INVALID_AUTH")


def test_cert_login_without_or_with_an_unknown_certificate_is_invalid_auth(raw, ziti_app):
    request_id, _ = start(raw, method="cert")
    ziti_error(raw.post("/oidc/login/cert", params={"id": request_id}, json={}), 401, "INVALID_AUTH")
    stranger = hp.make_leaf(None, "stranger")
    with ZitiClient.in_process(ziti_app, peer_certs=[stranger.cert]) as client:
        request_id, _ = start(client.http)
        ziti_error(client.http.post("/oidc/login/cert", params={"id": request_id}, json={}), 401, "INVALID_AUTH")


def test_unknown_or_expired_auth_request_is_unauthorized(raw, ziti_clock, user):
    ziti_error(password_login(raw, "not-a-request", user[1], "s3cret-pw"), 401, "UNAUTHORIZED")
    request_id, _ = start(raw, method="password")
    ziti_clock.advance(minutes=10)
    ziti_error(password_login(raw, request_id, user[1], "s3cret-pw"), 401, "UNAUTHORIZED")


def test_login_body_of_another_type_is_415(raw, user):
    request_id, _ = start(raw, method="password")
    reply = raw.post(
        "/oidc/login/password", params={"id": request_id}, content=b"username=x", headers={"Content-Type": "text/plain"}
    )
    ziti_error(reply, 415, "UNSUPPORTED_MEDIA_TYPE")


def test_login_page_get_names_the_request(raw):
    request_id, _ = start(raw)
    for page in ("username", "cert", "ext-jwt"):
        reply = raw.get(f"/oidc/login/{page}", params={"authRequestID": request_id})
        assert reply.status_code == 200 and reply.headers["auth-request-id"] == request_id


@pytest.fixture
def totp_user(ziti_app, user, ziti_clock):
    """The user with verified TOTP: ``(identity id, name, device)``."""
    with ZitiClient.in_process(ziti_app) as client:
        client.login(user[1], "s3cret-pw", api="client")
        device = flows.enroll_totp(client, at=ziti_clock.now())
    return user[0], user[1], device


def test_totp_pending_login_answers_auth_queries(raw, totp_user):
    request_id, _ = start(raw, method="password")
    reply = password_login(raw, request_id, totp_user[1], "s3cret-pw")
    assert reply.status_code == 200 and reply.headers["totp-required"] == "true"
    assert reply.json() == {
        "authQueries": [
            {
                "typeId": "TOTP",
                "provider": "ziti",
                "httpMethod": "POST",
                "httpUrl": "./oidc/login/totp",
                "format": "numeric",
                "minLength": 6,
                "maxLength": 8,
                "isTotpEnrolled": True,
                "scopes": None,
            }
        ]
    }
    assert raw.get("/oidc/login/auth-queries", params={"id": request_id}).json()["authQueries"][0]["typeId"] == "TOTP"


def test_wrong_totp_is_400_and_the_request_stays_open(raw, totp_user, ziti_clock):
    request_id, verifier = start(raw, method="password")
    password_login(raw, request_id, totp_user[1], "s3cret-pw")
    body = ziti_error(raw.post("/oidc/login/totp", data={"id": request_id, "code": "000000"}), 400, "INVALID TOTP CODE")
    assert body["message"] == "an invalid TOTP code was supplied"
    good = raw.post("/oidc/login/totp", json={"id": request_id, "code": totp_user[2].code(ziti_clock.now())})
    assert good.status_code == 302 and "/oidc/authorize/callback?id=" in good.headers["location"]
    assert exchange(raw, code_of(raw, request_id), verifier).status_code == 200


def test_recovery_code_answers_totp_once(raw, totp_user):
    recovery = totp_user[2].recovery_codes[0]
    for expected in (302, 400):
        request_id, _ = start(raw, method="password")
        password_login(raw, request_id, totp_user[1], "s3cret-pw")
        assert raw.post("/oidc/login/totp", data={"id": request_id, "code": recovery}).status_code == expected


def test_callback_before_every_factor_redirects_with_interaction_required(raw, totp_user):
    request_id, _ = start(raw, method="password")
    password_login(raw, request_id, totp_user[1], "s3cret-pw")
    reply = raw.get("/oidc/authorize/callback", params={"id": request_id})
    query = parse_qs(urlsplit(reply.headers["location"]).query)
    assert reply.status_code == 302 and query["error"] == ["interaction_required"] and "code" not in query
    assert raw.get("/oidc/authorize/callback", params={"id": "unknown"}).status_code == 400


def test_totp_enrollment_inside_the_flow(raw, ziti_admin, user, ziti_clock):
    request_id, verifier = start(raw, method="password")
    assert password_login(raw, request_id, user[1], "s3cret-pw").status_code == 302
    created = raw.post("/oidc/login/totp/enroll", json={"id": request_id})
    assert created.status_code == 201 and created.json()["isVerified"] is False
    ziti_error(raw.post("/oidc/login/totp/enroll", json={"id": request_id}), 409, "MFA_EXISTS")
    secret = parse_qs(urlsplit(created.json()["provisioningUrl"]).query)["secret"][0]
    device = flows.TotpDevice(secret, [])
    ziti_error(
        raw.post("/oidc/login/totp/enroll/verify", json={"id": request_id, "code": "000000"}), 400, "INVALID TOTP CODE"
    )
    verified = raw.post(
        "/oidc/login/totp/enroll/verify", json={"id": request_id, "code": device.code(ziti_clock.now())}
    )
    assert verified.status_code == 302
    tokens = exchange(raw, code_of(raw, request_id), verifier).json()
    assert ziti_admin.management.detail_identity(user[0])["isMfaEnabled"] is True
    assert OidcTokens.from_reply(tokens, 0).claims["amr"] == ["password", "totp"]


# -- authorize: OAuth errors -------------------------------------------------------------


@pytest.mark.parametrize(
    "override, error",
    [
        ({"client_id": "stranger"}, "invalid_client"),
        ({"redirect_uri": "https://evil.example/auth/callback"}, "invalid_request"),
        ({"scope": ""}, "invalid_request"),
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"response_type": "token"}, "unsupported_response_type"),
    ],
)
def test_authorize_refuses_bad_parameters(raw, override, error):
    params = {
        "client_id": "openziti",
        "scope": "openid offline_access",
        "response_type": "code",
        "redirect_uri": "http://localhost:20314/auth/callback",
        "code_challenge": "x" * 43,
        "code_challenge_method": "S256",
        **override,
    }
    oauth_error(raw.get("/oidc/authorize", params=params), 400, error)


def test_authorize_without_method_redirects_by_certificate(raw, ziti_app, ziti_admin, ziti_unique):
    _, identity = enrolled_identity(ziti_admin, ziti_unique("redir"))
    with flows.cert_client(ziti_app, identity) as client:
        reply = client.http.post(
            "/oidc/authorize",
            params={
                "client_id": "openziti",
                "scope": "openid",
                "response_type": "code",
                "redirect_uri": "openziti://auth/callback",
                "code_challenge": "x" * 43,
                "code_challenge_method": "S256",
            },
        )
    assert reply.headers["location"].startswith("/oidc/login/cert?authRequestID=")
    assert (
        raw.get(
            "/oidc/authorize",
            params={
                "client_id": "native",
                "scope": "openid",
                "response_type": "code",
                "redirect_uri": GO_REDIRECT,
                "code_challenge": "x" * 43,
                "code_challenge_method": "S256",
            },
        )
        .headers["location"]
        .startswith("/oidc/login/username?")
    )


# -- token endpoint: OAuth errors ----------------------------------------------------------


@pytest.fixture
def logged_in(raw):
    """A completed password login: ``(code, verifier)``."""
    request_id, verifier = start(raw, method="password")
    password_login(raw, request_id, "admin", "admin")
    return code_of(raw, request_id), verifier


def test_grant_type_missing_or_unsupported(raw):
    oauth_error(raw.post(TOKEN, data={"client_id": "openziti"}), 400, "invalid_request", "grant_type missing")
    oauth_error(
        raw.post(TOKEN, data={"client_id": "openziti", "grant_type": "password"}), 400, "unsupported_grant_type"
    )
    oauth_error(raw.post(TOKEN, data={"client_id": "nobody", "grant_type": "refresh_token"}), 400, "invalid_client")


def test_wrong_pkce_verifier_does_not_consume_the_code(raw, logged_in):
    code, verifier = logged_in
    oauth_error(exchange(raw, code, verifier[:-2] + "zz"), 400, "invalid_grant", "invalid code_verifier")
    oauth_error(exchange(raw, code, ""), 400, "invalid_request", "code_verifier required")
    assert exchange(raw, code, verifier).status_code == 200
    oauth_error(exchange(raw, code, verifier), 400, "invalid_grant", "invalid code")


def test_unknown_code_and_other_redirect_uri(raw, logged_in):
    code, verifier = logged_in
    oauth_error(exchange(raw, "not-a-code", verifier), 400, "invalid_grant", "invalid code")
    oauth_error(
        exchange(raw, code, verifier, redirect_uri=GO_REDIRECT),
        400,
        "invalid_grant",
        "redirect_uri does not correspond",
    )


def test_code_expires_with_its_auth_request(raw, logged_in, ziti_clock):
    ziti_clock.advance(minutes=11)
    oauth_error(exchange(raw, *logged_in), 400, "invalid_grant", "invalid code")


def test_c_sdk_code_tail_with_a_repeated_state_is_accepted(raw, logged_in):
    code, verifier = logged_in
    content = (
        f"state=st4te&code={code}&state=st4te&grant_type=authorization_code&code_verifier={verifier}"
        f"&client_id=openziti&redirect_uri=http://localhost:20314/auth/callback"
    )
    reply = raw.post(TOKEN, content=content, headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert reply.status_code == 200 and reply.json()["token_type"] == "Bearer"


def test_bad_refresh_tokens(raw):
    tokens = password_tokens(raw, "admin", "admin")
    oauth_error(refresh(raw, "garbage"), 400, "invalid_grant", "failed to parse refresh token")
    oauth_error(refresh(raw, tokens["access_token"]), 400, "invalid_grant", "invalid token type, expected refresh")
    oauth_error(
        refresh(raw, tokens["refresh_token"], client_id="native"),
        400,
        "invalid_grant",
        "client_id does not match original grant",
    )
    scoped = raw.post(
        TOKEN,
        data={
            "client_id": "openziti",
            "grant_type": "refresh_token",
            "refresh_token": tokens["refresh_token"],
            "scope": "openid admin",
        },
    )
    oauth_error(scoped, 400, "invalid_scope")


def test_cert_bound_refresh_needs_the_certificate(raw, ziti_app, ziti_admin, ziti_unique):
    _, identity = enrolled_identity(ziti_admin, ziti_unique("bound"))
    with flows.cert_client(ziti_app, identity) as client:
        client.login_cert(oidc="c")
        tokens = client.oidc
    oauth_error(
        refresh(raw, tokens.refresh_token), 400, "access_denied", "peer certificate fingerprint does not match token"
    )


def test_token_exchange_as_sdk_golang(raw):
    tokens = password_tokens(raw, "admin", "admin")
    base = {
        "client_id": "native",
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "subject_token": tokens["refresh_token"],
        "subject_token_type": "urn:ietf:params:oauth:token-type:refresh_token",
    }
    renewed = raw.post(TOKEN, data={**base, "requested_token_type": "urn:ietf:params:oauth:token-type:refresh_token"})
    assert renewed.status_code == 200 and renewed.json()["refresh_token"]
    assert (
        raw.get("/edge/client/v1/current-identity", headers=bearer(renewed.json()["access_token"])).status_code == 200
    )
    id_reply = raw.post(TOKEN, data={**base, "requested_token_type": "urn:ietf:params:oauth:token-type:id_token"})
    assert id_reply.json()["token_type"] == "N_A"
    refused = raw.post(TOKEN, data={**base, "subject_token_type": "urn:ietf:params:oauth:token-type:id_token"})
    oauth_error(refused, 400, "invalid_request")
