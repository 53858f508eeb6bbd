"""Whatever the parameters, the OIDC endpoints answer a 2xx, 3xx or 4xx: never a 500.

Parameters are drawn around the valid values (registered clients, allowed
redirects, real auth request ids, codes and tokens) so the property reaches
deep into each endpoint, not only its first check.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.app import create_app
from controller.clock import FrozenClock
from harness.client import ZitiClient
from tests.flows.oidc_support import password_tokens, start
from tests.sizes import examples

PATHS = [
    "/oidc/authorize",
    "/oidc/authorize/callback",
    "/oidc/login/password",
    "/oidc/login/username",
    "/oidc/login/cert",
    "/oidc/login/ext-jwt",
    "/oidc/login/totp",
    "/oidc/login/totp/enroll",
    "/oidc/login/totp/enroll/verify",
    "/oidc/login/auth-queries",
    "/oidc/oauth/token",
    "/oidc/keys",
    "/oidc/.well-known/openid-configuration",
    "/oidc/userinfo",
    "/oidc/oauth/introspect",
    "/oidc/revoke",
    "/oidc/end_session",
    "/oidc/logged-out",
]
NAMES = [
    "client_id",
    "redirect_uri",
    "scope",
    "response_type",
    "code_challenge",
    "code_challenge_method",
    "state",
    "nonce",
    "method",
    "prompt",
    "id",
    "authRequestID",
    "username",
    "password",
    "code",
    "configTypes",
    "sdkType",
    "envOs",
    "grant_type",
    "code_verifier",
    "refresh_token",
    "subject_token",
    "subject_token_type",
    "requested_token_type",
    "audience",
    "access_token",
    "token",
    "token_type_hint",
    "client_secret",
    "client_assertion",
    "id_token_hint",
    "post_logout_redirect_uri",
    "csr_pem",
    "csrPem",
]
CONTENT_TYPES = [
    "application/json",
    "application/x-www-form-urlencoded",
    "text/plain",
    "",
    "application/json; charset=x",
]


@pytest.fixture(scope="module")
def oidc_world():
    """One controller with a live auth request and tokens whose values the strategies reuse."""
    app = create_app(clock=FrozenClock("2025-06-01T12:00:00Z"))
    client = ZitiClient.in_process(app)
    request_id, _ = start(client.http, method="password")
    tokens = password_tokens(client.http, "admin", "admin")
    known = [
        "openziti",
        "native",
        "http://localhost:20314/auth/callback",
        "openid offline_access",
        "code",
        "S256",
        "password",
        "admin",
        request_id,
        tokens["access_token"],
        tokens["refresh_token"],
        tokens["id_token"],
        "http://127.0.0.1:1234/auth/logout",
        "refresh_token",
        "authorization_code",
        "urn:ietf:params:oauth:grant-type:token-exchange",
        "urn:ietf:params:oauth:token-type:refresh_token",
        "urn:ietf:params:oauth:token-type:id_token",
    ]
    yield client, known
    client.close()
    app.controller.close()


def values(known):
    return st.sampled_from(known) | st.text(max_size=30) | st.binary(max_size=20).map(lambda b: b.decode("latin-1"))


def json_values(known):
    """Form fields are strings; a JSON body may hold anything."""
    scalars = (
        values(known)
        | st.none()
        | st.booleans()
        | st.integers(-5, 2**40)
        | st.floats(allow_nan=False, allow_infinity=False)
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
        max_leaves=6,
    )


@settings(max_examples=examples(200, 30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_oidc_endpoints_never_answer_500(oidc_world, data):
    client, known = oidc_world
    path = data.draw(st.sampled_from(PATHS))
    method = data.draw(st.sampled_from(["GET", "POST", "DELETE"]))
    query = data.draw(st.dictionaries(st.sampled_from(NAMES), values(known), max_size=6))
    as_json = data.draw(st.booleans())
    fields = data.draw(
        st.dictionaries(st.sampled_from(NAMES), json_values(known) if as_json else values(known), max_size=8)
    )
    headers = {"Content-Type": data.draw(st.sampled_from(CONTENT_TYPES))}
    if data.draw(st.booleans()):
        headers["Authorization"] = data.draw(
            st.sampled_from(["Basic b3BlbnppdGk6", "Basic !!", "Bearer x"] + ["Bearer " + k for k in known[9:12]])
        )
    kwargs = {"params": query, "headers": headers}
    if method != "GET":
        if as_json:
            kwargs["json"] = fields
        else:
            kwargs["data"] = fields
    reply = client.http.request(method, path, **kwargs)
    assert reply.status_code < 500, (method, path, query, fields, reply.text)
    if reply.status_code >= 400 and reply.status_code != 405:
        assert reply.headers["content-type"].startswith("application/json") or path.endswith("/callback")
