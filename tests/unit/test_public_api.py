"""The curated public surface of ``controller`` and ``harness`` resolves and stays small."""

from __future__ import annotations

import importlib

import pytest

EXPECTED = {
    "controller": {
        "create_app",
        "Controller",
        "Config",
        "Clock",
        "FrozenClock",
        "Ids",
        "ThreadedServer",
        "TLSServer",
        "ControllerError",
    },
    "harness": {
        "ZitiClient",
        "ApiError",
        "Network",
        "NetworkError",
        "apply",
        "export",
        "diff",
        "Analysis",
        "LocalController",
        "Population",
        "VirtualClient",
        "generate",
        "DataPlane",
        "SyncDataPlane",
    },
}


@pytest.mark.parametrize("package", sorted(EXPECTED))
def test_all_is_the_curated_list_and_every_name_resolves(package):
    module = importlib.import_module(package)
    assert set(module.__all__) == EXPECTED[package]
    for name in module.__all__:
        assert getattr(module, name) is not None, name


@pytest.mark.parametrize("package", sorted(EXPECTED))
def test_unknown_names_are_attribute_errors(package):
    with pytest.raises(AttributeError):
        _ = importlib.import_module(package).no_such_name


def test_the_exported_error_is_the_one_the_client_raises():
    import controller
    import harness

    with harness.ZitiClient.in_process(controller.create_app()) as client:
        with pytest.raises(harness.ApiError):
            client.management.get_current_identity()
