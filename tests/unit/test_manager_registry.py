"""The controller is a typed registry: every service a declared, typed field, built in one place."""

from __future__ import annotations

import collections.abc
import typing

import pytest

from controller.app import Controller, create_app
from controller.model.base import EntityManager


@pytest.fixture(scope="module")
def controller():
    app = create_app()
    yield app.controller
    app.controller.close()


def _holds(value, hint) -> bool:
    origin = typing.get_origin(hint)
    if origin is collections.abc.Callable:
        return callable(value)
    return isinstance(value, hint)


def test_every_declared_field_is_set_with_its_declared_type(controller):
    hints = typing.get_type_hints(Controller)
    for name, hint in hints.items():
        assert name in vars(controller), f"{name} is declared but never built"
        assert _holds(getattr(controller, name), hint), f"{name} is not a {hint}"


def test_nothing_undeclared_is_set_on_the_controller(controller):
    declared = set(typing.get_type_hints(Controller))
    undeclared = {name for name in vars(controller) if not name.startswith("_")} - declared
    assert not undeclared, f"declare these on Controller: {sorted(undeclared)}"


def test_every_manager_is_a_field_and_there_is_no_forwarding(controller):
    managers = [value for value in vars(controller).values() if isinstance(value, EntityManager)]
    assert {m.table for m in managers} >= {"identities", "services", "routers", "service_policies", "sessions"}
    assert "__getattr__" not in vars(Controller)
    with pytest.raises(AttributeError):
        _ = controller.no_such_manager


@pytest.mark.parametrize("name", ["mfa_enabled", "resolve_config_types", "enrollment_jwt"])
def test_switchboard_methods_live_with_their_owners(name):
    assert not hasattr(Controller, name)
