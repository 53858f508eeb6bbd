"""Time and fault control: in-process from Python, and over HTTP in simulation mode only."""

from __future__ import annotations

import httpx
import pytest

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


def test_control_routes_do_not_exist_in_default_mode(api, admin):
    assert admin.mgmt("GET", "/simulation/clock").status_code == 404
    assert admin.mgmt("POST", "/simulation/faults", json={"path": ".*", "status": 503}).status_code == 404


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
    app.controller.faults._sleep = slept.append
    client.management.call("createSimulationFault", body={"path": "/version$", "latencyMs": 250, "count": 1})
    client.edge.list_version()
    assert slept == [0.25]


def test_in_process_faults_and_clock_from_python(ziti_app, ziti_clock):
    ctl = ziti_app.controller
    with ZitiClient.in_process(ziti_app) as client:
        client.login("admin", "admin")
        ctl.faults.add("/identities", method="GET", status=503, count=1)
        with pytest.raises(ApiError) as caught:
            client.management.list_identities()
        assert caught.value.status == 503
        ctl.faults.add("/version$", drop=True, count=1)
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
