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
    registry = app.controller.enrollment.enroll_methods.methods
    assert tuple(registry) == enroll_methods.METHOD_NAMES
    assert {type(method) for method in registry.values()} == set(enroll_methods.METHODS)


def test_the_authentication_registry_serves_exactly_the_declared_methods(app):
    assert tuple(app.controller.logins.auth.methods) == primary.METHOD_NAMES
    assert [type(method) for method in app.controller.logins.auth.methods.values()] == list(primary.METHODS)


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


def test_each_enrollment_method_serves_its_declared_route(app):
    served = {op.op_id: op for op in app.routes if op.path.startswith("/enroll/")}
    for method in enroll_methods.METHODS:
        op = served[method.route.op_id]
        assert (op.method, op.path, op.summary) == ("POST", f"/enroll/{method.name}", method.summary)
        assert ("token" in op.query) == method.route.token_query
        body_fields = None if op.body is None else tuple(op.body["properties"])
        assert body_fields == method.route.body


def test_the_identity_enrollments_and_authenticator_kinds_come_from_the_declarations(app):
    ops = {op.op_id: op for op in app.routes}
    declared = {m.name: m.identity_field for m in enroll_methods.METHODS if m.identity_field is not None}
    assert set(ops["createIdentity"].body["properties"]["enrollment"]["properties"]) == set(declared)
    assert ops["createEnrollment"].body["properties"]["method"]["enum"] == list(declared)
    kinds = [m.authenticator for m in primary.METHODS if m.authenticator]
    assert ops["createAuthenticator"].body["properties"]["method"]["enum"] == kinds


def test_a_method_name_of_its_own_is_spelled_only_in_its_module():
    import ast
    from pathlib import Path

    import controller

    root = Path(controller.__file__).parent
    spelled = {
        path.relative_to(root).as_posix()
        for path in root.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and node.value == "ottca"
    }
    assert spelled == {"enroll/ottca.py"}
