"""The discovery document's userinfo, introspection, revocation and end_session endpoints, as the real ones answer."""

from __future__ import annotations

from urllib.parse import urlsplit

import jwt
import pytest

from harness.client import ZitiClient
from harness.dataplane import flows
from tests.flows.oidc_support import bearer, oauth_error, password_identity, password_tokens

ME = "/edge/client/v1/current-identity"


@pytest.fixture
def tokens(raw, ziti_admin, ziti_unique):
    """A fresh OIDC password login's token reply."""
    name = ziti_unique("info-user")
    password_identity(ziti_admin, name)
    return password_tokens(raw, name, "s3cret-pw")


def test_every_endpoint_discovery_names_is_served(raw):
    document = raw.get("/oidc/.well-known/openid-configuration").json()
    names = ("userinfo_endpoint", "introspection_endpoint", "end_session_endpoint", "revocation_endpoint")
    for name in names:
        path = urlsplit(document[name]).path
        assert raw.post(path).status_code != 404, name


def test_userinfo_answers_an_access_token_with_an_empty_object(raw, tokens):
    for reply in (
        raw.get("/oidc/userinfo", headers=bearer(tokens["access_token"])),
        raw.post("/oidc/userinfo", data={"access_token": tokens["access_token"]}),
        raw.get("/oidc/userinfo", params={"access_token": tokens["access_token"]}),
    ):
        assert reply.status_code == 200 and reply.json() == {}, reply.text


def test_userinfo_refusals(raw, tokens, ziti_clock):
    oauth_error(raw.get("/oidc/userinfo"), 401, "invalid_request", "access token missing")
    oauth_error(raw.get("/oidc/userinfo", headers=bearer("not-a-token")), 401, "access_denied", "access token invalid")
    oauth_error(raw.get("/oidc/userinfo", headers=bearer(tokens["id_token"])), 403, "server_error")
    ziti_clock.advance(hours=2)
    expired = raw.get("/oidc/userinfo", headers=bearer(tokens["access_token"]))
    oauth_error(expired, 401, "access_denied", "access token invalid")


def test_a_revoked_access_token_gets_no_userinfo(raw, tokens):
    reply = raw.post("/oidc/revoke", data={"client_id": "openziti", "token": tokens["access_token"]})
    assert reply.status_code == 200 and reply.content == b"null"
    revoked = raw.get("/oidc/userinfo", headers=bearer(tokens["access_token"]))
    oauth_error(revoked, 403, "access_denied", "access token revoked")
    assert raw.get(ME, headers=bearer(tokens["access_token"])).status_code == 401


def test_revocation_needs_a_known_client_and_a_token(raw, tokens):
    oauth_error(raw.post("/oidc/revoke", data={"token": "x"}), 400, "invalid_client", "client not found")
    oauth_error(raw.post("/oidc/revoke", data={"client_id": "openziti"}), 400, "invalid_request", "token missing")
    ignored = raw.post("/oidc/revoke", data={"client_id": "native", "token": "anything"})
    assert ignored.status_code == 200
    refreshed = raw.post("/oidc/revoke", data={"client_id": "openziti", "token": tokens["refresh_token"]})
    assert refreshed.status_code == 200
    reuse = raw.post(
        "/oidc/oauth/token",
        data={"client_id": "openziti", "grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]},
    )
    assert reuse.status_code >= 400


def test_introspection_needs_an_authenticated_client_which_no_caller_can_be(raw, tokens):
    token = tokens["access_token"]
    anonymous = raw.post("/oidc/oauth/introspect", data={"token": token, "client_id": "openziti"})
    oauth_error(anonymous, 400, "invalid_client", "client must be authenticated")
    secret = {"client_id": "openziti", "client_secret": "guess"}
    oauth_error(raw.post("/oidc/oauth/introspect", data=secret), 400, "invalid_request", "token missing")
    refused = raw.post("/oidc/oauth/introspect", data={**secret, "token": token})
    oauth_error(refused, 400, "unauthorized_client")
    assert "error_description" not in refused.json()


def test_end_session_with_an_id_token_ends_that_session_only(raw, ziti_admin, ziti_unique, tokens):
    other_name = ziti_unique("other-user")
    password_identity(ziti_admin, other_name)
    other = password_tokens(raw, other_name, "s3cret-pw")
    reply = raw.get("/oidc/end_session", params={"id_token_hint": tokens["id_token"], "state": "s1"})
    assert reply.status_code == 302 and reply.headers["location"] == "/oidc/logged-out?state=s1"
    assert raw.get(ME, headers=bearer(tokens["access_token"])).status_code == 401
    assert raw.get(ME, headers=bearer(other["access_token"])).status_code == 200
    page = raw.get("/oidc/logged-out")
    assert page.status_code == 200 and page.text == "signed out successfully"


def test_end_session_redirects_to_a_registered_logout_uri(raw, tokens):
    claims = jwt.decode(tokens["id_token"], options={"verify_signature": False})
    params = {"id_token_hint": tokens["id_token"], "post_logout_redirect_uri": "http://127.0.0.1:41234/auth/logout"}
    reply = raw.post("/oidc/end_session", data=params)
    assert reply.status_code == 302 and reply.headers["location"] == params["post_logout_redirect_uri"]
    assert claims["z_asid"] and claims["azp"] == "openziti"


def test_end_session_refusals(raw, tokens):
    hint = tokens["id_token"]
    cases = [
        ({"id_token_hint": "junk"}, "invalid_request", "id_token_hint invalid"),
        ({"id_token_hint": hint, "client_id": "native"}, "invalid_request", None),
        ({"client_id": "nobody"}, "invalid_client", "client not found"),
        (
            {"client_id": "openziti", "post_logout_redirect_uri": "https://evil.example/auth/logout"},
            "invalid_request",
            None,
        ),
    ]
    for params, error, description in cases:
        oauth_error(raw.get("/oidc/end_session", params=params), 400, error, description)
    assert raw.get(ME, headers=bearer(tokens["access_token"])).status_code == 200
    assert raw.get("/oidc/end_session").headers["location"] == "/oidc/logged-out"


# -- the TOTP token of an OIDC session ---------------------------------------------------------


def test_an_oidc_session_trades_a_totp_code_for_a_signed_totp_token(ziti_app, ziti_admin, ziti_unique, ziti_clock, raw):
    name = ziti_unique("totp-token")
    password_identity(ziti_admin, name)
    with ZitiClient.in_process(ziti_app) as me:
        me.now = lambda: ziti_clock.now().timestamp()
        me.login(name, "s3cret-pw", oidc="go")
        no_code = me.edge.call("createTotpToken", body={"code": ""}, raw=True)
        assert no_code.status_code == 400 and no_code.json()["error"]["code"] == "MFA_INVALID_TOKEN"
        missing = me.edge.call("createTotpToken", body={"code": "123456"}, raw=True)
        assert missing.status_code == 409 and missing.json()["error"]["code"] == "MFA_NOT_ENROLLED"
        device = flows.enroll_totp(me, at=ziti_clock.now())
        wrong = me.edge.call("createTotpToken", body={"code": device.recovery_codes[0]}, raw=True)
        assert wrong.status_code == 400 and wrong.json()["error"]["code"] == "MFA_INVALID_TOKEN"
        data = me.edge.call("createTotpToken", body={"code": device.code(ziti_clock.now())})
        access = jwt.decode(me.oidc.access_token, options={"verify_signature": False})
    keys = raw.get("/oidc/keys").json()["keys"]
    header = jwt.get_unverified_header(data["token"])
    [jwk] = [key for key in keys if key["kid"] == header["kid"]]
    public = jwt.PyJWK(jwk).key
    claims = jwt.decode(data["token"], public, algorithms=[header["alg"]], options={"verify_aud": False})
    assert claims["z_t"] == "t" and claims["sub"] == access["sub"] and claims["z_asid"] == access["z_asid"]
    assert claims["iss"] == access["iss"] and "exp" not in claims and claims["jti"]
    assert data["issuedAt"].endswith("Z")
    # no expiry reads as long expired to the userinfo endpoint's verifier, as the real one's
    invalid = raw.get("/oidc/userinfo", headers=bearer(data["token"]))
    oauth_error(invalid, 401, "access_denied", "access token invalid")
