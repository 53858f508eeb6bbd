"""Per-request external JWTs against an oracle: whatever bearers a request carries, it is the identity's
exactly when one of the first three is a valid token of an allowed signer; otherwise 401 with the challenge
the real controller gives (``invalid`` when a bearer is not even a JWT, else ``missing``)."""

from __future__ import annotations

import jwt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.app import create_app
from controller.clock import FrozenClock
from harness.client import ZitiClient
from tests.api.jwt_support import SigningKey, claims, signer_body
from tests.sizes import examples

ME = "/edge/client/v1/current-identity"
ISSUER = "https://per-request.idp.example"


@pytest.fixture(scope="module")
def world():
    """A controller with a certificate signer, an identity it names, and the tokens the strategies mix."""
    clock = FrozenClock("2025-06-01T12:00:00Z")
    app = create_app(clock=clock)
    admin = ZitiClient.in_process(app)
    admin.login("admin", "admin")
    key = SigningKey("prop-kid")
    admin.create(
        "external-jwt-signers", signer_body("prop-signer", ISSUER, cert_pem=key.cert_pem(clock.now()), kid="prop-kid")
    )
    identity_id = admin.create("identities", {"name": "prop-person", "type": "User", "isAdmin": False})
    valid = key.token(claims(ISSUER, identity_id, clock))
    others = [
        key.token(claims(ISSUER, identity_id, clock, lifetime=-1)),  # expired
        key.token(claims(ISSUER, "nobody", clock)),  # names no identity
        SigningKey("prop-kid").token(claims(ISSUER, identity_id, clock)),  # forged: same kid, other key
        key.token(claims("https://elsewhere.example", identity_id, clock)),  # no such signer
    ]
    anonymous = ZitiClient.in_process(app)
    yield anonymous, identity_id, valid, others
    anonymous.close()
    admin.close()
    app.controller.close()


def is_jwt(token: str) -> bool:
    try:
        jwt.decode(token, options={"verify_signature": False})
        return True
    except jwt.PyJWTError:
        return False


JUNK = st.text(
    alphabet=st.characters(min_codepoint=33, max_codepoint=126, blacklist_characters=","), min_size=1, max_size=20
)


@settings(max_examples=examples(200, 40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_request_is_the_identitys_exactly_when_a_first_three_bearer_is_valid(world, data):
    client, identity_id, valid, others = world
    bearers = data.draw(st.lists(st.sampled_from([valid, *others]) | JUNK, max_size=5))
    header = ", ".join(f"Bearer {token}" for token in bearers)
    response = client.http.get(ME, headers={"Authorization": header} if header else {})
    considered = bearers[:3]
    if valid in considered:
        assert response.status_code == 200 and response.json()["data"]["id"] == identity_id
        return
    assert response.status_code == 401 and response.json()["error"]["code"] == "UNAUTHORIZED"
    challenge = response.headers["www-authenticate"]
    if any(not is_jwt(token) for token in considered):
        assert challenge.startswith('Bearer realm="openziti-oidc" error="invalid"'), challenge
    else:
        assert 'zt-session realm="zt-session" error="missing"' in challenge, challenge
