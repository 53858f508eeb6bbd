"""OIDC tokens over time: refresh with rotation, expiry, revocations, disabled identities, logout, partial sessions."""

from __future__ import annotations

import jwt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.client import ZitiClient
from harness.client.oidc import OidcError, OidcTokens
from harness.dataplane import flows
from tests.flows.oidc_support import (
    bearer,
    code_of,
    exchange,
    oauth_error,
    password_identity,
    password_tokens,
    refresh,
    start,
)
from tests.support import auth_policy_body

#: what a login body's ``sdkInfo`` may hold: any JSON the controller parses (no NaN: not JSON)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
EXPIRED = 'Bearer realm="openziti-oidc" error="expired" error_description="token expired"'
INVALID = 'Bearer realm="openziti-oidc" error="invalid" error_description="token is invalid"'
ME = "/edge/client/v1/current-identity"


@pytest.fixture
def user(ziti_admin, ziti_unique):
    """A non-admin password identity: ``(name, password)``."""
    name = ziti_unique("oidc-user")
    password_identity(ziti_admin, name)
    return name, "s3cret-pw"


@pytest.mark.parametrize("style", ["c", "go"])
def test_client_refreshes_before_expiry_and_keeps_the_session_id(ziti, ziti_clock, style):
    session = ziti.login("admin", "admin", oidc=style)
    first = ziti.oidc
    for _ in range(4):
        ziti_clock.advance(minutes=25)
        assert ziti.edge.get_current_api_session()["id"] == session["id"]
    assert ziti.oidc.access_token != first.access_token and ziti.oidc.claims["z_asid"] == session["id"]
    assert ziti.oidc.refresh_token != first.refresh_token


def test_expired_access_token_is_refused_with_expired(raw, ziti_clock):
    tokens = password_tokens(raw, "admin", "admin")
    assert raw.get(ME, headers=bearer(tokens["access_token"])).status_code == 200
    ziti_clock.advance(minutes=30)
    reply = raw.get(ME, headers=bearer(tokens["access_token"]))
    assert reply.status_code == 401 and reply.json()["error"]["code"] == "UNAUTHORIZED"
    assert reply.headers["www-authenticate"] == EXPIRED


def test_tampered_token_is_invalid(raw):
    tokens = password_tokens(raw, "admin", "admin")
    header, payload, signature = tokens["access_token"].split(".")
    forged = ".".join([header, payload, signature[:-4] + ("AAAA" if not signature.endswith("AAAA") else "BBBB")])
    reply = raw.get(ME, headers=bearer(forged))
    assert reply.status_code == 401 and reply.headers["www-authenticate"] == INVALID


def test_refresh_rotates_and_a_spent_refresh_token_is_revoked(raw):
    tokens = password_tokens(raw, "admin", "admin")
    renewed = refresh(raw, tokens["refresh_token"])
    assert renewed.status_code == 200
    assert raw.get(ME, headers=bearer(renewed.json()["access_token"])).status_code == 200
    oauth_error(refresh(raw, tokens["refresh_token"]), 400, "invalid_grant", "refresh token revoked")
    assert refresh(raw, renewed.json()["refresh_token"]).status_code == 200


def test_expired_refresh_token_is_refused(raw, ziti_clock):
    tokens = password_tokens(raw, "admin", "admin")
    ziti_clock.advance(hours=24)
    oauth_error(refresh(raw, tokens["refresh_token"]), 400, "invalid_grant", "refresh token expired")


def test_disabling_the_identity_ends_its_tokens_and_refreshes(raw, ziti_admin, user, ziti_clock):
    tokens = password_tokens(raw, *user)
    identity_id = ziti_admin.management.list_identities(filter=f'name = "{user[0]}"')[0]["id"]
    ziti_admin.management.disable_identity(identity_id, body={"durationMinutes": 0})
    assert raw.get(ME, headers=bearer(tokens["access_token"])).status_code == 401
    oauth_error(refresh(raw, tokens["refresh_token"]), 400, "invalid_grant")
    ziti_admin.management.enable_identity(identity_id)
    ziti_clock.advance(seconds=2)
    # re-enabled: tokens issued before the disable stay revoked, a new login works
    assert raw.get(ME, headers=bearer(tokens["access_token"])).status_code == 401
    oauth_error(refresh(raw, tokens["refresh_token"]), 400, "invalid_grant", "refresh token revoked")
    assert raw.get(ME, headers=bearer(password_tokens(raw, *user)["access_token"])).status_code == 200


@pytest.mark.parametrize("kind", ["JTI", "API_SESSION", "IDENTITY"])
def test_revocations_end_the_token(raw, ziti_admin, user, kind):
    tokens = password_tokens(raw, *user)
    claims = OidcTokens.from_reply(tokens, 0).claims
    target = {"JTI": claims["jti"], "API_SESSION": claims["z_asid"], "IDENTITY": claims["sub"]}[kind]
    ziti_admin.management.create_revocation(body={"id": target, "type": kind})
    reply = raw.get(ME, headers=bearer(tokens["access_token"]))
    assert reply.status_code == 401 and reply.headers["www-authenticate"] == INVALID


def test_logout_ends_the_oidc_session(raw):
    tokens = password_tokens(raw, "admin", "admin")
    assert raw.delete("/edge/client/v1/current-api-session", headers=bearer(tokens["access_token"])).status_code == 200
    assert raw.get(ME, headers=bearer(tokens["access_token"])).status_code == 401
    oauth_error(refresh(raw, tokens["refresh_token"]), 400, "invalid_grant", "refresh token revoked")


def test_non_admin_bearer_cannot_reach_admin_operations(raw, user):
    tokens = password_tokens(raw, *user)
    reply = raw.get("/edge/management/v1/identities", headers=bearer(tokens["access_token"]))
    assert reply.status_code == 401 and reply.json()["error"]["code"] == "UNAUTHORIZED"
    assert raw.get("/edge/management/v1/current-identity", headers=bearer(tokens["access_token"])).status_code == 200


def test_policy_requiring_totp_makes_a_token_without_totp_partial(raw, ziti_admin, user):
    tokens = password_tokens(raw, *user)
    body = {**auth_policy_body("needs-totp"), "secondary": {"requireTotp": True}}
    policy = ziti_admin.management.create_auth_policy(body=body)
    identity_id = ziti_admin.management.list_identities(filter=f'name = "{user[0]}"')[0]["id"]
    ziti_admin.management.patch_identity(identity_id, body={"authPolicyId": policy["id"]})
    assert raw.get(ME, headers=bearer(tokens["access_token"])).status_code == 401
    session = raw.get("/edge/client/v1/current-api-session", headers=bearer(tokens["access_token"]))
    assert session.status_code == 200
    assert [q["typeId"] for q in session.json()["data"]["authQueries"]] == ["TOTP"]


def test_no_token_answers_both_realms_missing(raw):
    reply = raw.get(ME)
    assert reply.status_code == 401
    assert 'Bearer realm="openziti-oidc" error="missing"' in reply.headers["www-authenticate"]
    assert 'zt-session realm="zt-session" error="missing"' in reply.headers["www-authenticate"]


def test_oidc_session_enrolls_totp_and_the_next_login_asks_for_it(ziti_app, ziti_admin, user, ziti_clock):
    name, password = user
    with ZitiClient.in_process(ziti_app) as me:
        me.now = lambda: ziti_clock.now().timestamp()
        me.login(name, password, oidc="go")
        device = flows.enroll_totp(me, at=ziti_clock.now())
        assert ziti_admin.management.list_identities(filter=f'name = "{name}"')[0]["isMfaEnabled"] is True
        reply = me.edge.call("authenticateMfa", body={"code": device.code(ziti_clock.now())}, raw=True)
        assert reply.status_code == 400 and reply.json()["error"]["code"] == "INVALID_BACKING_TOKEN_TYPE"
        me.logout()
        with pytest.raises(OidcError) as caught:
            me.login(name, password, oidc="c")
        assert caught.value.step.startswith("totp")


def test_one_resolver_takes_a_legacy_token_or_an_access_jwt(ziti_app, raw, ziti_admin, user):
    """``SessionTokens.resolve_token`` is what an edge router's hello calls with the token it got."""
    from controller import errors

    resolver = ziti_app.controller.logins.session_tokens
    tokens = password_tokens(raw, *user)
    oidc = resolver.resolve_token(tokens["access_token"])
    legacy_token = raw.post(
        "/edge/client/v1/authenticate", params={"method": "password"}, json={"username": user[0], "password": user[1]}
    ).json()["data"]["token"]
    legacy = resolver.resolve_token(legacy_token)
    assert oidc.is_oidc and oidc.identity["name"] == user[0] and oidc.session["id"] == oidc.claims["z_asid"]
    assert not legacy.is_oidc and legacy.identity["id"] == oidc.identity["id"]
    for bad in ("", "not-a-token", tokens["refresh_token"], tokens["access_token"][:-3] + "abc"):
        with pytest.raises(errors.Unauthorized):
            resolver.resolve_token(bad)


def test_router_hello_lookup_checks_the_bound_certificate_by_fingerprint(ziti_app, ziti_admin, ziti_unique):
    """``api_sessions.for_token`` (an edge router's hello) resolves an access JWT bound to a certificate."""
    from controller import errors
    from harness.client import pki as hp
    from tests.flows.oidc_support import enrolled_identity

    _, identity = enrolled_identity(ziti_admin, ziti_unique("hello"))
    with flows.cert_client(ziti_app, identity) as client:
        client.login_cert(oidc="c")
        token = client.oidc.access_token
    leaf_fingerprint = hp.sha1_fingerprint(identity.cert_key().cert)
    api_sessions = ziti_app.controller.accounts.api_sessions
    session, found = api_sessions.for_token(token, peer_fingerprint=leaf_fingerprint)
    assert session["id"] == client.oidc.claims["z_asid"] and session["identity_id"] == found["id"]
    with pytest.raises(errors.Unauthorized):
        api_sessions.for_token(token, peer_fingerprint="00" * 20)


def test_an_access_token_signature_is_checked_once_then_only_its_expiry_and_revocations(
    ziti_app, raw, user, ziti_admin, ziti_clock, monkeypatch
):
    """Router hellos and bearer requests reuse a verified signature; times and revocations are checked every time."""
    from controller import errors
    from controller.oidc import tokens

    checked = []
    real = tokens.verify_signature
    monkeypatch.setattr(tokens, "verify_signature", lambda *args: checked.append(1) or real(*args))
    access = password_tokens(raw, *user)["access_token"]
    api_sessions = ziti_app.controller.accounts.api_sessions
    for _ in range(3):  # minted here: its signature is ours by construction
        api_sessions.for_token(access)
    assert checked == []
    ziti_app.controller.logins.oidc.signer._verified.clear()  # as after a restart: the token is new to this process
    for _ in range(3):
        api_sessions.for_token(access)
        assert raw.get(ME, headers=bearer(access)).status_code == 200
    assert checked == [1]
    jti = ziti_app.controller.logins.oidc.signer.known_claims(access)["jti"]
    ziti_admin.management.create_revocation(body={"id": jti, "type": "JTI"})
    with pytest.raises(errors.Unauthorized):
        api_sessions.for_token(access)
    ziti_clock.advance(minutes=31)
    assert raw.get(ME, headers=bearer(access)).headers["www-authenticate"] == EXPIRED


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sdk_info=st.dictionaries(st.text(min_size=1, max_size=6), JSON, min_size=1, max_size=4))
def test_a_minted_access_token_is_remembered_with_exactly_the_claims_it_carries(ziti_app, raw, user, sdk_info):
    """Its claims are kept as minted (not parsed back from the payload): they must be what the payload decodes to."""
    request_id, verifier = start(raw, method="password")
    login = {"username": user[0], "password": user[1], "sdkInfo": sdk_info}
    assert raw.post("/oidc/login/password", params={"id": request_id}, json=login).status_code == 302
    reply = exchange(raw, code_of(raw, request_id), verifier)
    assert reply.status_code == 200, reply.text
    access = reply.json()["access_token"]
    carried = jwt.decode(access, options={"verify_signature": False})
    assert carried["z_sdk"] == sdk_info
    assert ziti_app.controller.logins.oidc.signer.known_claims(access) == carried
    assert raw.get(ME, headers=bearer(access)).status_code == 200


def test_empty_session_claims_are_left_out_as_the_real_controller_does(raw, user):
    """A non-admin password login: no admin flag, external id, config types, cert fingerprint or expired-cert leave."""
    claims = jwt.decode(password_tokens(raw, *user)["access_token"], options={"verify_signature": False})
    assert not {"z_ia", "z_eid", "z_ct", "z_acf", "z_cae"} & set(claims), claims
    assert claims["z_aid"] == "openziti" and claims["z_authid"] and claims["z_asid"]
    assert claims["z_cfs"] is None and claims["z_iccc"] is False  # not in the omitted set: present even when empty
