"""The one way the harness starts a controller: ``controller.embedded.EmbeddedController``, a handle."""

from __future__ import annotations

from controller.clock import FrozenClock
from controller.config import Config
from controller.embedded import EmbeddedController, request_bodies
from harness.client import ZitiClient
from harness.processes.server import LocalController


def test_the_handle_moves_time_injects_faults_and_reports_events():
    with EmbeddedController(Config(simulation=True), clock=FrozenClock("2025-06-01T12:00:00Z")) as controller:
        seen: list[dict] = []
        controller.events.subscribe(seen.append)
        with ZitiClient.in_process(controller.app) as anonymous:
            session = anonymous.signed_in("admin", "admin")
            assert session.mgmt("GET", "/current-identity").status_code == 200
            controller.faults.add("/current-identity$", status=503, count=1)
            assert session.mgmt("GET", "/current-identity").status_code == 503
            assert session.mgmt("GET", "/current-identity").status_code == 200
            controller.clock.advance(minutes=31)
            assert session.mgmt("GET", "/current-identity").status_code == 401
        assert "authentication" in {event["namespace"] for event in seen}  # the login, as events report it
        assert controller.url is None  # in-process: nobody serves it


def test_a_served_handle_names_its_url_and_close_stops_it():
    with LocalController() as local:
        assert local.embedded.url == local.url
        with ZitiClient.connect(local.embedded.url) as client:
            assert client.edge.list_version()["apiVersions"]["edge"]
    assert local.embedded is None and local.app is None


def test_request_bodies_are_the_management_apis_by_operation():
    bodies = request_bodies("management")
    assert "name" in bodies["createIdentity"]["properties"]
    assert "listIdentities" not in bodies  # no body, no entry
