"""Whatever the body, filter or id, the controller answers in the envelope and never 500."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.api.operations import PREFIXES
from controller.app import create_app
from controller.clock import FrozenClock
from harness.client import ZitiClient
from harness.client.transport import inprocess
from tests.sizes import examples

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=5),
    max_leaves=12,
)
FIELD_NAMES = st.sampled_from(
    [
        "name",
        "type",
        "isAdmin",
        "roleAttributes",
        "tags",
        "appData",
        "authPolicyId",
        "defaultHostingCost",
        "defaultHostingPrecedence",
        "serviceHostingCosts",
        "externalId",
        "primary",
        "secondary",
        "method",
        "identityId",
        "username",
        "password",
        "expiresAt",
        "durationMinutes",
        "enrollment",
        "certPem",
        "caId",
    ]
)
BODIES = st.dictionaries(FIELD_NAMES, JSON, max_size=8) | JSON


@pytest.fixture(scope="module")
def admin_api():
    app = create_app(clock=FrozenClock("2025-06-01T12:00:00Z"))
    with inprocess(app) as http:
        api = ZitiClient(http)
        admin = api.signed_in("admin", "admin")
        identity_id = admin.create("identities", {"name": "prop-target", "type": "User", "isAdmin": False})
        yield admin, identity_id


WRITE_OPS = [op for op in create_app().routes for _ in [0] if op.method in ("POST", "PUT", "PATCH")]


def _path(op, identity_id):
    return PREFIXES[op.apis[0]] + re.sub(r"{\w+}", identity_id, op.path)


@settings(max_examples=examples(150, 30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(op=st.sampled_from(WRITE_OPS), body=BODIES)
def test_random_bodies_never_cause_a_500(admin_api, op, body):
    admin, identity_id = admin_api
    response = admin.request(op.method, _path(op, identity_id), json=body)
    assert response.status_code < 500, (op.op_id, body, response.text)
    if response.status_code >= 400:
        error = response.json()["error"]
        assert error["code"] and error["requestId"] and isinstance(error.get("cause", {}), dict)


@settings(max_examples=examples(150, 30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=60))
def test_random_filters_are_answered_or_invalid_filter(admin_api, text):
    admin, _ = admin_api
    response = admin.mgmt("GET", "/identities", params={"filter": text})
    assert response.status_code in (200, 400), response.text
    if response.status_code == 400:
        assert response.json()["error"]["code"] == "INVALID_FILTER"


@settings(max_examples=examples(100, 20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
# NOTE: httpx's WSGI transport carries paths as latin-1, so ids stay in that range here.
@given(
    entity_id=st.text(
        st.characters(max_codepoint=255, exclude_categories=("Cs", "Cc")), min_size=1, max_size=30
    ).filter(
        lambda t: "/" not in t and t.strip() and t not in (".", "..") and "?" not in t and "#" not in t and "%" not in t
    )
)
def test_random_ids_are_404_never_500(admin_api, entity_id):
    admin, _ = admin_api
    response = admin.mgmt("GET", "/identities/" + entity_id)
    assert response.status_code in (200, 404), response.text
