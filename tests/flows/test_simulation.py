"""Time and fault control: in-process from Python, and over HTTP in simulation mode only."""

from __future__ import annotations

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.app import create_app
from controller.config import Config
from controller.server.serve import ThreadedServer
from harness.client import ApiError, ZitiClient


@pytest.fixture
def sim_client():
    app = create_app(Config(simulation=True))
    with ThreadedServer(app) as server, ZitiClient.connect(server.url) as client:
        client.login("admin", "admin")
        yield client, app
    app.controller.close()


def test_control_routes_do_not_exist_in_default_mode(ziti, ziti_admin):
    assert ziti_admin.mgmt("GET", "/simulation/clock").status_code == 404
    assert ziti_admin.mgmt("POST", "/simulation/faults", json={"path": ".*", "status": 503}).status_code == 404


def test_clock_advances_over_http_and_expires_sessions(sim_client):
    client, app = sim_client
    before = client.management.call("detailSimulationClock")["now"]
    after = client.management.call("advanceSimulationClock", body={"seconds": 3600})["now"]
    assert after > before
    client.relogin = None  # see the expiry instead of logging in again
    with pytest.raises(ApiError) as caught:
        client.management.get_current_identity()
    assert caught.value.status == 401


@pytest.mark.parametrize("status, code", [(429, "RATE_LIMITED"), (503, "TIMEOUT")])
def test_injected_error_answers_in_the_envelope_then_clears(sim_client, status, code):
    client, _ = sim_client
    client.management.call("createSimulationFault", body={"path": "/current-identity$", "status": status, "count": 1})
    with pytest.raises(ApiError) as caught:
        client.management.get_current_identity()
    assert caught.value.status == status and caught.value.code == code
    assert client.management.get_current_identity()["isDefaultAdmin"] is True


def test_dropped_connection_is_a_transport_error_over_http(sim_client):
    client, _ = sim_client
    client.management.call("createSimulationFault", body={"path": "/version$", "drop": True, "count": 1})
    with pytest.raises(httpx.TransportError):
        client.edge.list_version()
    assert client.edge.list_version()["version"]


def test_latency_is_added(sim_client):
    client, app = sim_client
    slept = []
    app.controller.ops.faults._sleep = slept.append
    client.management.call("createSimulationFault", body={"path": "/version$", "latencyMs": 250, "count": 1})
    client.edge.list_version()
    assert slept == [0.25]


def test_in_process_faults_and_clock_from_python(ziti_app, ziti_clock):
    ctl = ziti_app.controller
    with ZitiClient.in_process(ziti_app) as client:
        client.login("admin", "admin")
        ctl.ops.faults.add("/identities", method="GET", status=503, count=1)
        with pytest.raises(ApiError) as caught:
            client.management.list_identities()
        assert caught.value.status == 503
        ctl.ops.faults.add("/version$", drop=True, count=1)
        with pytest.raises(httpx.TransportError):
            client.edge.list_version()
        ziti_clock.advance(minutes=31)
        client.relogin = None
        with pytest.raises(ApiError):
            client.management.get_current_identity()


def test_simulation_routes_are_admin_only(sim_client):
    client, app = sim_client
    with ZitiClient.connect(client.http.base_url.__str__()) as anonymous:
        response = anonymous.management.call("detailSimulationClock", raw=True)
        assert response.status_code == 401


# -- faults on a router's edge messages (/simulation/router-faults) ------------------------------------------

ROUTER_FAULTS = "/simulation/router-faults"


@pytest.fixture(scope="module")
def sim_admin():
    """An in-process controller in simulation mode with one edge router (not running: nothing to acknowledge)."""
    app = create_app(Config(simulation=True))
    with ZitiClient.in_process(app) as client:
        client.login("admin", "admin")
        router_id = client.management.create_edge_router(body={"name": "er-sim"})["id"]
        yield client, router_id
    app.controller.close()


def test_router_faults_do_not_exist_in_default_mode(ziti, ziti_admin):
    assert ziti_admin.mgmt("GET", ROUTER_FAULTS).status_code == 404
    assert ziti_admin.mgmt("POST", ROUTER_FAULTS, json={"router": "x", "drop": True}).status_code == 404


def test_a_router_fault_lists_its_remaining_time_on_the_controllers_clock_until_it_ends(sim_admin):
    client, router_id = sim_admin
    mgmt = client.management
    created = mgmt.create_simulation_router_fault(body={"router": "er-sim", "latencyMs": 250, "seconds": 100})
    forever = mgmt.create_simulation_router_fault(body={"router": router_id, "drop": True, "contentTypes": ["Dial"]})
    try:
        fault = mgmt.detail_simulation_router_fault(created["id"])
        assert fault["router"] == {"id": router_id, "name": "er-sim"}
        assert (fault["direction"], fault["contentTypes"], fault["drop"], fault["latencyMs"]) == (
            "both",
            [],
            False,
            250,
        )
        assert fault["applied"] is False and fault["hits"] == 0  # the router is not connected
        assert 99 < fault["remainingSeconds"] <= 100
        mgmt.call("advanceSimulationClock", body={"seconds": 40})
        assert 59 < mgmt.detail_simulation_router_fault(created["id"])["remainingSeconds"] <= 60
        mgmt.call("advanceSimulationClock", body={"seconds": 60})
        [left] = mgmt.list_simulation_router_faults()
        assert left["id"] == forever["id"] and (left["endsAt"], left["remainingSeconds"]) == (None, None)
        with pytest.raises(ApiError) as caught:
            mgmt.detail_simulation_router_fault(created["id"])
        assert caught.value.status == 404
        mgmt.delete_simulation_router_fault(forever["id"])
        assert mgmt.list_simulation_router_faults() == []
    finally:
        mgmt.delete_simulation_router_faults()


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_an_unknown_router_fault_is_not_found(sim_admin, method):
    client, _ = sim_admin
    response = client.mgmt(method, f"{ROUTER_FAULTS}/no-such-fault")
    assert response.status_code == 404 and response.json()["error"]["code"] == "NOT_FOUND"


def test_router_faults_are_admin_only(sim_client):
    client, _ = sim_client
    with ZitiClient.connect(str(client.http.base_url)) as anonymous:
        assert anonymous.management.call("listSimulationRouterFaults", raw=True).status_code == 401
        response = anonymous.management.call(
            "createSimulationRouterFault", body={"router": "x", "drop": True}, raw=True
        )
        assert response.status_code == 401


ABSENT = object()
CONTENT_TYPES = ("Data", "Connect", "Dial", "Hello", "StateClosed")
FIELDS = {
    "router": st.sampled_from(["er-sim", "ID", "nope", "", None, 5, ABSENT]),
    "direction": st.sampled_from(["fromSdk", "toSdk", "both", None, "up", ABSENT]),
    "contentTypes": st.one_of(
        st.sampled_from([None, "Data", ABSENT]), st.lists(st.sampled_from([*CONTENT_TYPES, "Date", ""]), max_size=3)
    ),
    "drop": st.sampled_from([True, False, None, "yes", ABSENT]),
    "latencyMs": st.sampled_from([0, 1, 150, 60000, 60001, -1, None, "5", ABSENT]),
    "seconds": st.sampled_from([0, -1, 0.5, 30, 366 * 86400, 366 * 86400 + 1, None, "30", ABSENT]),
    "latency": st.sampled_from([5, ABSENT]),  # not a field: a typo of latencyMs
}


def expected_status(body: dict, router_id: str) -> int:
    """What the endpoint must answer: 400 for a body its schema refuses, 404 for an unknown router, 400 for a
    fault that is not exactly a drop or a delay or names an unknown content type, else 201."""
    types = body.get("contentTypes")
    schema_ok = (
        isinstance(body.get("router"), str)
        and body["router"] != ""
        and body.get("direction") in ("fromSdk", "toSdk", "both", None)
        and (types is None or (isinstance(types, list) and all(isinstance(t, str) and t for t in types)))
        and body.get("drop") in (True, False, None)
        and (body.get("latencyMs") is None or (isinstance(body["latencyMs"], int) and 0 <= body["latencyMs"] <= 60000))
        and (
            body.get("seconds") is None
            or (isinstance(body["seconds"], (int, float)) and 0 < body["seconds"] <= 366 * 86400)
        )
        and "latency" not in body
    )
    if not schema_ok:
        return 400
    if body["router"] not in ("er-sim", router_id):
        return 404
    if any(t not in CONTENT_TYPES for t in types or ()) or bool(body.get("drop")) == bool(body.get("latencyMs")):
        return 400
    return 201


@settings(deadline=None)
@given(body=st.fixed_dictionaries({}, optional=FIELDS))
def test_a_router_fault_is_created_exactly_when_valid_and_bad_input_is_answered_in_the_envelope(sim_admin, body):
    client, router_id = sim_admin
    body = {key: router_id if value == "ID" else value for key, value in body.items() if value is not ABSENT}
    response = client.management.call("createSimulationRouterFault", body=body, raw=True)
    wanted = expected_status(body, router_id)
    assert response.status_code == wanted, (body, response.text)
    listed = client.management.list_simulation_router_faults()
    try:
        if wanted == 201:
            [fault] = listed
            assert fault["id"] == response.json()["data"]["id"]
            assert fault["contentTypes"] == list(dict.fromkeys(body.get("contentTypes") or []))
            assert fault["direction"] == (body.get("direction") or "both")
        else:
            assert response.json()["error"]["code"] == ("NOT_FOUND" if wanted == 404 else "COULD_NOT_VALIDATE")
            assert listed == []  # nothing half-written
    finally:
        client.management.delete_simulation_router_faults()


# -- a cluster member cut off from the others (/simulation/cluster-faults) --------------------------------------


def test_cluster_faults_on_a_single_controller_say_it_is_not_a_cluster(sim_client):
    client, _app = sim_client
    for method, path, body in (
        ("GET", "/simulation/cluster-faults", None),
        ("POST", "/simulation/cluster-faults", {}),
        ("DELETE", "/simulation/cluster-faults", None),
    ):
        response = client.mgmt(method, path, json=body)
        assert response.status_code == 400, response.text
        assert response.json()["error"]["code"] == "SERVER_NOT_RUNNING_IN_HA_MODE"


def test_a_cluster_fault_names_members_of_the_cluster_only(ziti_cluster):
    client = ziti_cluster.client(0)
    for body in ({"members": ["no-such-member"]}, {"members": "ctrl2"}, {"members": ["ctrl2"], "seconds": 3}):
        response = client.mgmt("POST", "/simulation/cluster-faults", json=body)
        assert response.status_code == 400, response.text
        assert response.json()["error"]["code"] in ("INVALID_FIELD", "COULD_NOT_VALIDATE")
    created = client.mgmt("POST", "/simulation/cluster-faults", json={"members": ["ctrl2"]})
    assert created.status_code == 201, created.text
    listed = client.mgmt("GET", "/simulation/cluster-faults").json()["data"]
    assert [row["members"][0]["id"] for row in listed] == ["ctrl2"]
    assert client.mgmt("DELETE", f"/simulation/cluster-faults/{created.json()['data']['id']}").status_code == 200
    assert client.mgmt("GET", "/simulation/cluster-faults").json()["data"] == []
    missing = client.mgmt("DELETE", "/simulation/cluster-faults/cut-off-99")
    assert missing.status_code == 404
    client.close()
