"""Handlers and mappers name what they use: ``controller/api/wiring.py`` binds them when the app is built."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from controller.api.operations import RouteTable
from controller.api.routes import build_route_table
from controller.api.wiring import MAPPERS, BoundApi, Wiring, needs
from controller.app import create_app

API = Path(__file__).resolve().parents[2] / "controller" / "api"


def test_every_operation_binds_with_the_services_its_handler_names():
    app = create_app()
    assert set(app.api.handlers) == set(app.routes)
    for op in app.routes:
        bound = app.api.handlers[op]
        if op.uses is None and needs(op.handler):
            assert set(bound.keywords) == set(needs(op.handler)), op.op_id


def test_a_handler_naming_nothing_known_fails_when_the_app_is_built_not_on_a_request():
    from controller.api.operations import Operation

    def handler(call, *, no_such_service):
        return None

    table = RouteTable()
    table.add(Operation("probe", "GET", "/probe", handler))
    with pytest.raises(LookupError, match="no_such_service"):
        BoundApi(table, create_app().controller.bindable())


def test_a_mapper_is_bound_once_per_app_and_to_that_apps_services():
    first, second = create_app(), create_app()
    assert first.api.resolve("identity_view") is first.api.resolve("identity_view")
    view = first.api.resolve("identity_view")
    assert view.keywords["identities"] is first.controller.accounts.identities
    assert second.api.resolve("identity_view").keywords["identities"] is second.controller.accounts.identities


def test_mappers_have_unique_names_and_name_only_services_or_mappers():
    services = set(create_app().controller.bindable())
    wiring = Wiring({name: object() for name in services})
    for name, fn in MAPPERS.items():
        for needed in needs(fn):
            assert needed in services or needed in MAPPERS, f"{name} needs {needed!r}"
        wiring.resolve(name)


def test_a_route_table_binds_per_app_while_the_table_itself_is_shared():
    first, second = create_app(), create_app()
    assert first.routes is second.routes
    op = next(op for op in first.routes if op.op_id == "detailIdentity")
    assert first.api.handlers[op] is not second.api.handlers[op]
    assert len(list(build_route_table())) == len(list(first.routes))


def test_no_module_of_the_api_layer_reads_the_controller_registry():
    """The handlers' services come as parameters: no ``ctl.<manager>``, no ``.controller`` lookups."""
    offenders = []
    for path in sorted(API.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\bctl\b|\.controller\b|context\.ctl", line):
                offenders.append(f"{path.relative_to(API)}:{number}: {line.strip()}")
    assert offenders == []
