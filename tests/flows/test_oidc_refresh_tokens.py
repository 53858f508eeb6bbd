"""Refresh tokens are HS256 MACs under a secret derived from the server key: only this controller makes or takes them.

The real controller signs them with its server key; this one MACs them (one public-key signature fewer per
login, see docs/architecture.md, "OIDC tokens"). Whatever the signature, the refresh grant and the exchange
refuse a tampered token, one of another controller, an access or ID token in its place, and a refresh token
in an access token's place; expiry and revocations are in tests/flows/test_oidc_tokens.py.
"""

from __future__ import annotations

import base64
import json

import jwt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.app import create_app
from controller.config import Config
from harness.client import ZitiClient
from tests.flows.oidc_support import TOKEN, bearer, oauth_error, password_tokens, refresh

ME = "/edge/client/v1/current-identity"
EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
TYPE = "urn:ietf:params:oauth:token-type:"
B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


@pytest.fixture
def tokens(raw):
    return password_tokens(raw, "admin", "admin")


@pytest.fixture
def other_tokens():
    """A token reply of another controller (its own PKI, so its own server key) and its JWKS."""
    app = create_app(Config(hostnames=("localhost", "other-controller.example")))
    try:
        with ZitiClient.in_process(app) as client:
            yield password_tokens(client.http, "admin", "admin"), client.http.get("/oidc/keys").json()
    finally:
        app.controller.close()


def _segment(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).rstrip(b"=").decode()


def _payload(token: str) -> dict:
    return jwt.decode(token, options={"verify_signature": False})


def exchange(http, subject: str, subject_type: str, requested: str = "access_token"):
    return http.post(
        TOKEN,
        data={
            "client_id": "native",
            "grant_type": EXCHANGE,
            "subject_token": subject,
            "subject_token_type": TYPE + subject_type,
            "requested_token_type": TYPE + requested,
        },
    )


def test_the_refresh_token_is_a_mac_and_still_refreshes_and_exchanges(raw, tokens):
    header = jwt.get_unverified_header(tokens["refresh_token"])
    access = jwt.get_unverified_header(tokens["access_token"])
    assert header == {"alg": "HS256", "kid": header["kid"], "typ": "JWT"} and header["kid"] != access["kid"]
    claims = _payload(tokens["refresh_token"])
    assert claims["z_t"] == "r" and claims["z_asid"] == _payload(tokens["access_token"])["z_asid"]
    renewed = refresh(raw, tokens["refresh_token"])
    assert renewed.status_code == 200, renewed.text
    assert jwt.get_unverified_header(renewed.json()["refresh_token"])["alg"] == "HS256"
    exchanged = exchange(raw, renewed.json()["refresh_token"], "refresh_token", "refresh_token")
    assert exchanged.status_code == 200, exchanged.text
    assert raw.get(ME, headers=bearer(exchanged.json()["access_token"])).status_code == 200


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_one_character_changed_in_a_refresh_token_is_refused(raw, tokens, data):
    token = tokens["refresh_token"]
    at = data.draw(st.integers(0, len(token) - 1), label="position")
    char = data.draw(st.sampled_from(B64URL + ".").filter(lambda c: c != token[at]), label="replacement")
    reply = refresh(raw, token[:at] + char + token[at + 1 :])
    oauth_error(reply, 400, "invalid_grant")


def test_a_tampered_refresh_token_is_refused_and_the_genuine_one_still_works(raw, tokens):
    header, payload, signature = tokens["refresh_token"].split(".")
    claims = _payload(tokens["refresh_token"])
    flipped = signature[:-4] + ("AAAA" if not signature.endswith("AAAA") else "BBBB")
    forged = {
        "signature": f"{header}.{payload}.{flipped}",
        "payload": f"{header}.{_segment({**claims, 'sub': 'someone-else', 'exp': claims['exp'] + 3600})}.{signature}",
        "unsigned": f"{_segment({'alg': 'none', 'typ': 'JWT'})}.{payload}.",
        "no signature": f"{header}.{payload}.",
        "two parts": f"{header}.{payload}",
    }
    for token in forged.values():
        oauth_error(refresh(raw, token), 400, "invalid_grant", "failed to parse refresh token")
        oauth_error(exchange(raw, token, "refresh_token"), 400, "invalid_grant")
    assert refresh(raw, tokens["refresh_token"]).status_code == 200


def test_a_refresh_token_of_another_controller_is_refused(raw, tokens, other_tokens):
    theirs, their_keys = other_tokens
    ours = raw.get("/oidc/keys").json()
    assert {k["kid"] for k in their_keys["keys"]}.isdisjoint(k["kid"] for k in ours["keys"])
    oauth_error(refresh(raw, theirs["refresh_token"]), 400, "invalid_grant", "failed to parse refresh token")
    oauth_error(exchange(raw, theirs["refresh_token"], "refresh_token"), 400, "invalid_grant")
    # Their payload and MAC under our header (our kid): the MAC, not the kid, refuses it.
    our_header = tokens["refresh_token"].split(".")[0]
    _, payload, signature = theirs["refresh_token"].split(".")
    grafted = f"{our_header}.{payload}.{signature}"
    oauth_error(refresh(raw, grafted), 400, "invalid_grant", "failed to parse refresh token")
    assert refresh(raw, theirs["refresh_token"]).status_code == 400  # refused, not spent: nothing changed


def test_an_access_or_id_token_is_not_a_refresh_token(raw, tokens):
    expected = "invalid token type, expected refresh"
    oauth_error(refresh(raw, tokens["access_token"]), 400, "invalid_grant", expected)
    oauth_error(refresh(raw, tokens["id_token"]), 400, "invalid_grant", "failed to parse refresh token")
    oauth_error(exchange(raw, tokens["access_token"], "refresh_token"), 400, "invalid_grant", expected)


def test_a_refresh_token_is_not_an_access_token(raw, tokens):
    oauth_error(
        exchange(raw, tokens["refresh_token"], "access_token"),
        400,
        "invalid_grant",
        "invalid token type, expected access",
    )
    reply = raw.get(ME, headers=bearer(tokens["refresh_token"]))
    assert reply.status_code == 401 and reply.json()["error"]["code"] == "UNAUTHORIZED"
    # A refresh token's claims under the access header (the server key's kid) verify as nothing.
    access_header = tokens["access_token"].split(".")[0]
    _, payload, signature = tokens["refresh_token"].split(".")
    grafted = f"{access_header}.{_segment({**_payload(tokens['refresh_token']), 'z_t': 'a'})}.{signature}"
    assert raw.get(ME, headers=bearer(grafted)).status_code == 401
    assert raw.get(ME, headers=bearer(f"{access_header}.{payload}.{signature}")).status_code == 401


def test_a_refresh_token_signed_with_the_server_key_is_still_taken(ziti_app, raw, tokens):
    """Refresh tokens minted before refresh tokens were MACs (the real controller's kind) keep working."""
    signed = ziti_app.controller.logins.oidc.signer.sign(_payload(tokens["refresh_token"]))
    assert jwt.get_unverified_header(signed)["alg"] == jwt.get_unverified_header(tokens["access_token"])["alg"]
    renewed = refresh(raw, signed)
    assert renewed.status_code == 200, renewed.text
    oauth_error(refresh(raw, tokens["refresh_token"]), 400, "invalid_grant", "refresh token revoked")  # same jti


def test_a_refresh_token_beyond_orjson_is_macd_by_pyjwt_and_reads_back_exactly(ziti_app):
    """Client info with an integer beyond 64 bits (orjson cannot encode it): PyJWT MACs it the same way."""
    from controller.oidc.tokens import REFRESH

    signer = ziti_app.controller.logins.oidc.signer
    custom = {"client_id": "openziti", "z_asid": "asid", "z_sdk": {"type": "ziti-sdk-c", "build": 2**70}}
    token, _ = signer.mint(REFRESH, "https://controller/oidc", "identity-id", custom)
    assert jwt.get_unverified_header(token)["alg"] == "HS256"
    assert signer.verify(token, REFRESH)["z_sdk"] == {"type": "ziti-sdk-c", "build": 2**70}
