"""Router tests wait for the controller's events (never for time); `net` starts routers on a shared controller."""

from __future__ import annotations

import threading

import pytest

from harness.client import ZitiClient
from harness.processes.server import LocalController
from tests.router.network import Net
from tests.support import warnings_of


class Timeline:
    """Events seen since the fixture started; ``wait`` blocks until one matches."""

    def __init__(self, events):
        self.seen: list[dict] = []
        self._cond = threading.Condition()
        self._unsubscribe = events.subscribe(self._on_event)

    def _on_event(self, event: dict) -> None:
        with self._cond:
            self.seen.append(event)
            self._cond.notify_all()

    def matching(self, namespace: str, event_type: str | None = None, **fields) -> list[dict]:
        with self._cond:
            return [
                e
                for e in self.seen
                if e.get("namespace") == namespace
                and event_type in (None, e.get("event_type"))
                and all(e.get(k) == v for k, v in fields.items())
            ]

    def wait(
        self, namespace: str, event_type: str | None = None, *, count: int = 1, timeout: float = 20, **fields
    ) -> list[dict]:
        with self._cond:
            ok = self._cond.wait_for(lambda: len(self.matching(namespace, event_type, **fields)) >= count, timeout)
        assert ok, f"no {namespace}/{event_type} {fields} event within {timeout} s"
        return self.matching(namespace, event_type, **fields)

    def close(self) -> None:
        self._unsubscribe()


@pytest.fixture
def timeline(ziti_quickstart_controller):
    recorder = Timeline(ziti_quickstart_controller.controller.events)
    yield recorder
    recorder.close()


@pytest.fixture
def router_log():
    with warnings_of("router") as lines:
        yield lines


@pytest.fixture(scope="module")
def network_controller():
    with LocalController() as local:
        with ZitiClient.connect(local.url) as admin:
            admin.login("admin", "admin")
            admin.management.create_service_edge_router_policy(
                body={"name": "all-all", "semantic": "AnyOf", "serviceRoles": ["#all"], "edgeRouterRoles": ["#all"]}
            )
        yield local


@pytest.fixture
def net(network_controller, tmp_path, ziti_unique):
    admin = ZitiClient.connect(network_controller.url)
    admin.login("admin", "admin")
    timeline = Timeline(network_controller.controller.events)
    network = Net(network_controller, admin, timeline, tmp_path, ziti_unique("net"))
    yield network
    network.close()
    timeline.close()
    admin.close()
