"""The served operations are exactly the real APIs' (fixtures/operations), plus the documented extras.

In the spirit of moto's implementation coverage: the controller's route table,
its mounted routes and the harness client are checked against a table of the
real operations, not against each other.
"""

from __future__ import annotations

from controller.api import ops_simulation
from controller.api.operations import ADMIN, PARTIAL, PUBLIC, SESSION
from controller.api.routes import build_route_table
from harness.client.operations import OPERATIONS
from tests.api.reference_operations import ALL_REFERENCE, ALWAYS, EXTRAS, NOT_SERVED, REFERENCE

LEVELS = {PUBLIC: "public", PARTIAL: "session", SESSION: "session", ADMIN: "admin"}


def keyed(rows) -> dict[tuple[str, str, str], dict]:
    return {(row["api"], row["method"], row["path"]): row for row in rows}


def served(routes) -> dict[tuple[str, str, str], dict]:
    return {
        (api, op.method, op.path): {"operationId": op.op_id, "auth": LEVELS[op.auth]}
        for op in routes
        for api in op.apis
    }


def test_the_reference_table_covers_the_three_real_apis():
    apis = {row["api"] for row in ALL_REFERENCE}
    assert apis == {"client", "management", "fabric"} and len(REFERENCE) > 250
    assert len(keyed(ALL_REFERENCE)) == len(ALL_REFERENCE)
    assert not set(keyed(ALL_REFERENCE)) & set(keyed(EXTRAS))


def test_operations_not_served_say_why_and_are_not_served():
    assert NOT_SERVED and all(row["why"] for row in NOT_SERVED)
    assert not set(keyed(NOT_SERVED)) & set(served(build_route_table(extra_modules=[ops_simulation])))


def test_the_default_route_table_serves_exactly_the_real_operations():
    assert set(served(build_route_table())) == set(keyed(REFERENCE)) | set(keyed(ALWAYS))


def test_simulation_mode_adds_exactly_the_documented_extras():
    routes = served(build_route_table(extra_modules=[ops_simulation]))
    assert set(routes) == set(keyed(REFERENCE)) | set(keyed(EXTRAS))
    assert all(row["why"] for row in EXTRAS)


def test_operation_ids_are_the_real_ones():
    routes = served(build_route_table(extra_modules=[ops_simulation]))
    for key, row in keyed(REFERENCE + EXTRAS).items():
        if row["operationId"] is not None:  # the real DELETE /current-api-session has none
            assert routes[key]["operationId"] == row["operationId"], key


def test_management_authorization_is_the_real_controllers():
    routes = served(build_route_table(extra_modules=[ops_simulation]))
    wrong = {
        key: (routes[key]["auth"], row["auth"])
        for key, row in keyed(REFERENCE + EXTRAS).items()
        if key[0] == "management" and routes[key]["auth"] != row["auth"]
    }
    assert not wrong, "served vs real: " + repr(wrong)


def test_client_api_public_operations_are_the_real_ones():
    routes = served(build_route_table())
    wrong = [
        key
        for key, row in keyed(REFERENCE).items()
        if key[0] == "client" and (routes[key]["auth"] == "public") != (row["auth"] == "public")
    ]
    assert not wrong


def test_the_harness_client_has_a_method_for_exactly_these_operations():
    harness = {
        (api, method, path): op_id for api, ops in OPERATIONS.items() for op_id, (method, path, _, _) in ops.items()
    }
    assert set(harness) == set(keyed(REFERENCE)) | set(keyed(EXTRAS))
    for key, row in keyed(REFERENCE + EXTRAS).items():
        if row["operationId"] is not None:
            assert harness[key] == row["operationId"], key
