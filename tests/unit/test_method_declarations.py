"""Enrollment and authentication methods are declared once; the registries, query enums and checks follow."""

from __future__ import annotations

import pytest

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
