"""What a router keeps of the SDK hellos its controller accepted, to answer them while the controller is away."""

from __future__ import annotations

import base64

import orjson
from hypothesis import given
from hypothesis import strategies as st

from router.control import AcceptedHellos


class Clock:
    def __init__(self, now: float = 1_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def jwt_with(claims: dict) -> str:
    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(orjson.dumps(value)).rstrip(b"=").decode()

    return f"{part({'alg': 'RS256'})}.{part(claims)}.c2ln"


CALLER = {"api_session_id": "as1", "identity_id": "i1", "identity_name": "one"}


def test_a_legacy_token_counts_for_the_idle_timeout_after_the_controller_accepted_it():
    clock = Clock()
    accepted = AcceptedHellos(clock=clock)
    accepted.add("legacy", "fp", CALLER)
    assert accepted.get("legacy", "fp") == CALLER
    assert accepted.get("legacy", "other certificate") is None
    clock.now += AcceptedHellos.LEGACY_SECONDS
    assert accepted.get("legacy", "fp") is None


@given(lifetime=st.integers(min_value=1, max_value=10**6))
def test_an_oidc_token_counts_until_its_exp(lifetime):
    clock = Clock()
    accepted = AcceptedHellos(clock=clock)
    token = jwt_with({"exp": int(clock.now) + lifetime, "sub": "i1"})
    accepted.add(token, "fp", CALLER)
    clock.now += lifetime - 1
    assert accepted.get(token, "fp") == CALLER
    clock.now += 1
    assert accepted.get(token, "fp") is None


def test_a_revoked_api_session_and_a_refusal_forget_at_once_and_the_oldest_go_beyond_the_limit():
    accepted = AcceptedHellos(limit=2, clock=Clock())
    accepted.add("a", "fp", CALLER)
    accepted.add("b", "fp", {**CALLER, "api_session_id": "as2"})
    accepted.revoke("as1")
    assert accepted.get("a", "fp") is None and accepted.get("b", "fp") is not None
    accepted.forget("b", "fp")
    assert accepted.get("b", "fp") is None
    for token in ("c", "d", "e"):
        accepted.add(token, "fp", CALLER)
    assert [accepted.get(t, "fp") is not None for t in ("c", "d", "e")] == [False, True, True]


def test_local_tokens_verify_signature_expiry_binding_and_revocations():
    import jwt as pyjwt
    from cryptography.hazmat.primitives.asymmetric import ec

    from router.local_tokens import LocalTokens

    key = ec.generate_private_key(ec.SECP256R1())
    jwk = pyjwt.algorithms.ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
    clock = Clock(1_000_000.0)
    local = LocalTokens(clock=clock)
    local.set_keys({"keys": [{**jwk, "kid": "k1", "alg": "ES256", "use": "sig"}]})

    def token(**claims) -> str:
        body = {"z_t": "a", "z_asid": "as1", "sub": "i1", "z_cfs": ["fp"], "iat": 999_000, "exp": 2**40, **claims}
        return pyjwt.encode(body, key, algorithm="ES256", headers={"kid": "k1"})

    assert local.caller(token(), "fp") == {"api_session_id": "as1", "identity_id": "i1", "identity_name": ""}
    assert local.caller(token(), "another certificate") is None
    assert local.caller(token(z_cfs=None), "fp") is None  # no binding: only the controller can tell
    assert local.caller(token(z_t="r"), "fp") is None  # a refresh token is no access token
    assert local.caller(token(exp=1), "fp") is None
    other = ec.generate_private_key(ec.SECP256R1())
    assert local.caller(pyjwt.encode({"z_t": "a"}, other, algorithm="ES256", headers={"kid": "k1"}), "fp") is None
    local.revoke("token", "j1")
    assert local.caller(token(jti="j1"), "fp") is None and local.caller(token(jti="j2"), "fp") is not None
    local.revoke("identityTokens", "i1")
    assert local.caller(token(), "fp") is None
    assert local.caller(token(iat=int(clock.now) + 5), "fp") is not None  # issued after the revocation
    local.revoke("apiSession", "as1")
    assert local.caller(token(iat=int(clock.now) + 5), "fp") is None
