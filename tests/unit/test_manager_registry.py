"""The controller is a typed registry by role: a few values, and services grouped in typed roles, built in one place."""

from __future__ import annotations

import collections.abc
import typing

import pytest

from controller.app import Controller, create_app
from controller.model.base import EntityManager
from controller.roles import Role

#: "a few groups of a dozen or so": the registry stays a handful of fields, each role a handful of services
MAX_FIELDS, MAX_ROLE = 25, 14


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


def _holders(controller) -> list:
    """The controller and each of its roles: every object whose fields are declared."""
    return [controller, *controller.roles()]


def test_every_declared_field_is_set_with_its_declared_type(controller):
    for holder in _holders(controller):
        for name, hint in typing.get_type_hints(type(holder)).items():
            assert name in vars(holder), f"{type(holder).__name__}.{name} is declared but never built"
            assert _holds(getattr(holder, name), hint), f"{type(holder).__name__}.{name} is not a {hint}"


def test_nothing_undeclared_is_set_on_the_controller_or_a_role(controller):
    for holder in _holders(controller):
        declared = set(typing.get_type_hints(type(holder)))
        undeclared = {name for name in vars(holder) if not name.startswith("_")} - declared
        assert not undeclared, f"declare these on {type(holder).__name__}: {sorted(undeclared)}"


def test_the_registry_is_a_few_roles_of_a_handful_each(controller):
    assert len(typing.get_type_hints(Controller)) <= MAX_FIELDS
    roles = controller.roles()
    declared = [name for name, hint in typing.get_type_hints(Controller).items() if isinstance(hint, type)]
    assert list(roles) == [
        getattr(controller, name) for name in declared if issubclass(typing.get_type_hints(Controller)[name], Role)
    ]
    assert all(len(role.members()) <= MAX_ROLE for role in roles)
    every = [name for role in roles for name in role.members()]
    assert len(every) == len(set(every)), "a service belongs to one role"


def test_every_manager_belongs_to_a_role_and_there_is_no_forwarding(controller):
    managers = [value for role in controller.roles() for value in role.members().values()]
    tables = {m.table for m in managers if isinstance(m, EntityManager)}
    assert tables >= {"identities", "services", "routers", "service_policies", "sessions"}
    assert not any(isinstance(value, EntityManager) for value in vars(controller).values())
    assert "__getattr__" not in vars(Controller)
    with pytest.raises(AttributeError):
        _ = controller.no_such_manager
    with pytest.raises(AttributeError):
        _ = controller.identities  # a manager is reached through its role: controller.accounts.identities


def test_handlers_and_mappers_can_bind_services_but_not_the_store(controller):
    services = controller.bindable()
    assert services["identities"] is controller.accounts.identities
    assert services["fabric"] is controller.routing.fabric
    assert not {"store", "core", "cascades"} & set(services)


@pytest.mark.parametrize("name", ["mfa_enabled", "resolve_config_types", "enrollment_jwt"])
def test_switchboard_methods_live_with_their_owners(name):
    assert not hasattr(Controller, name)
