"""The network managers are a typed registry built in one place; ``ctl.<name>`` still reaches them."""

from __future__ import annotations

import typing
from dataclasses import fields

import pytest

from controller.app import create_app
from controller.model import network
from controller.model.network import NetworkManagers


@pytest.fixture(scope="module")
def controller():
    app = create_app()
    yield app.controller
    app.controller.close()


def test_every_manager_has_the_declared_type(controller):
    hints = typing.get_type_hints(NetworkManagers, vars(network))
    for field in fields(NetworkManagers):
        assert isinstance(getattr(controller.network_managers, field.name), hints[field.name]), field.name


def test_the_controller_reaches_them_through_the_registry(controller):
    for field in fields(NetworkManagers):
        assert getattr(controller, field.name) is getattr(controller.network_managers, field.name)
    assert "services" not in vars(controller)  # not copied onto the controller
    with pytest.raises(AttributeError):
        _ = controller.no_such_manager
