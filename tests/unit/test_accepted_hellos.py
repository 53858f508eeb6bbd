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
