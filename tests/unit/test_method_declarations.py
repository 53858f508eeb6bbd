"""Enrollment and authentication methods are declared once; the registries, query enums and checks follow."""

from __future__ import annotations

import pytest
from falcon.testing import TestClient

from controller.app import create_app
from controller.auth import primary
from controller.enroll import methods as enroll_methods


@pytest.fixture(scope="module")
def app():
    return create_app()


def test_the_enrollment_registry_serves_exactly_the_declared_methods(app):
    registry = app.controller.enroll_methods.methods
    assert tuple(registry) == enroll_methods.METHOD_NAMES
    assert {type(method) for method in registry.values()} == set(enroll_methods.METHODS)


def test_the_authentication_registry_serves_exactly_the_declared_methods(app):
    assert tuple(app.controller.auth.methods) == primary.METHOD_NAMES
    assert [type(method) for method in app.controller.auth.methods.values()] == list(primary.METHODS)


@pytest.mark.parametrize(
    "op_id, names", [("enroll", enroll_methods.METHOD_NAMES), ("authenticate", primary.METHOD_NAMES)]
)
def test_the_method_query_enums_are_the_declared_names(app, op_id, names):
    op = next(op for op in app.routes if op.op_id == op_id)
    assert op.query["method"]["enum"] == list(names)


def test_every_declared_authentication_method_has_an_oidc_login_page_and_no_other_page_exists(app):
    client = TestClient(app)

    def status(page: str) -> int:
        return client.simulate_get(f"/oidc/login/{page}", params={"authRequestID": "unknown"}).status_code

    # a routed page refuses the unknown request (401); an unrouted one is not found
    assert {name: status(name) for name in (*primary.METHOD_NAMES, "username")} == dict.fromkeys(
        (*primary.METHOD_NAMES, "username"), 401
    )
    assert status("not-a-method") == 404
