"""The verified-token cache: bounded, the oldest leaves first, never cleared whole; revocations still count."""

from __future__ import annotations

import pytest

from controller import errors
from tests.flows.oidc_support import bearer, password_identity, password_tokens

ME = "/edge/client/v1/current-identity"


@pytest.fixture
def user(ziti_admin, ziti_unique):
    name = ziti_unique("cache-user")
    password_identity(ziti_admin, name)
    return name, "s3cret-pw"


@pytest.fixture
def signer(ziti_app):
    signer = ziti_app.controller.logins.oidc.signer
    signer._verified.clear()
    signer.verified_limit = 3
    return signer


def _cached(signer, tokens: list[str]) -> list[bool]:
    return [signer.known_claims(token) is not None for token in tokens]


def test_past_its_bound_the_cache_drops_the_oldest_token_only(raw, user, signer):
    tokens = [password_tokens(raw, *user)["access_token"] for _ in range(5)]
    assert _cached(signer, tokens) == [False, False, True, True, True]
    assert len(signer._verified) == 3


def test_an_evicted_token_is_checked_again_once_and_comes_back_newest(raw, user, signer, monkeypatch):
    from controller.oidc import tokens as module

    checked = []
    real = module.verify_signature
    monkeypatch.setattr(module, "verify_signature", lambda *args: checked.append(1) or real(*args))
    tokens = [password_tokens(raw, *user)["access_token"] for _ in range(4)]
    for _ in range(3):
        assert raw.get(ME, headers=bearer(tokens[0])).status_code == 200
    assert checked == [1]
    assert _cached(signer, tokens) == [True, False, True, True]


def test_expired_tokens_leave_first_whatever_the_bound(raw, user, signer, ziti_clock):
    signer.verified_limit = 100
    old = [password_tokens(raw, *user)["access_token"] for _ in range(3)]
    ziti_clock.advance(minutes=31)
    new = password_tokens(raw, *user)["access_token"]
    assert _cached(signer, [*old, new]) == [False, False, False, True]


def test_a_revoked_token_is_refused_while_it_is_still_cached(ziti_app, ziti_admin, raw, user, signer):
    token = password_tokens(raw, *user)["access_token"]
    assert raw.get(ME, headers=bearer(token)).status_code == 200
    jti = signer.known_claims(token)["jti"]
    ziti_admin.management.create_revocation(body={"id": jti, "type": "JTI"})
    assert signer.known_claims(token) is not None
    assert raw.get(ME, headers=bearer(token)).status_code == 401
    with pytest.raises(errors.Unauthorized):
        ziti_app.controller.accounts.api_sessions.for_token(token)


def test_the_cache_keeps_a_digest_of_each_token_not_the_token(raw, user, signer):
    """32 bytes a live SDK instead of its 1-1.5 KB JWT; a forged copy (another signature) is not found."""
    token = password_tokens(raw, *user)["access_token"]
    assert raw.get(ME, headers=bearer(token)).status_code == 200
    assert all(isinstance(key, bytes) and len(key) == 32 for key in signer._verified)
    assert token not in signer._verified
    assert signer.known_claims(token) is not None
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    assert signer.known_claims(forged) is None
    assert raw.get(ME, headers=bearer(forged)).status_code == 401
