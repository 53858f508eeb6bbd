"""A controller in this process with its embedded router and a control channel listener on a free port.

Routers started by the tests run as their own processes and reach it only over the network.
"""

from __future__ import annotations

import pytest

from controller.server.serve import ctrl_listener, free_port
from harness.client import ZitiClient
from harness.processes.routers import RouterProcess
from harness.processes.server import LocalController
from tests.router.conftest import Timeline
from tests.support import warnings_of


class Network:
    def __init__(self, local: LocalController, listener):
        self.local, self.listener = local, listener

    @property
    def controller(self):
        return self.local.controller


@pytest.fixture(scope="module")
def network():
    local = LocalController(router=True)
    port = free_port("127.0.0.1")
    local.config.ctrl_address = f"tls:127.0.0.1:{port}"
    local.start()
    # quick heartbeats so a stopped router is noticed well within the 5 s the issue allows (2.5 s: 1.5 s left a
    # router process on a loaded CI machine little room; the suspected cause of a rare failure of a test asserting
    # that a bystander router stays online)
    listener = ctrl_listener(local.controller, "127.0.0.1", port, heartbeat_seconds=0.5, heartbeat_timeout=2.5)
    listener.start()
    try:
        yield Network(local, listener)
    finally:
        listener.stop()
        local.stop()


@pytest.fixture
def admin(network):
    with ZitiClient.connect(network.local.url) as client:
        client.login("admin", "admin")
        yield client


@pytest.fixture
def make_router(admin, tmp_path, ziti_unique):
    """``make_router(enroll=True, start=True)`` -> a :class:`harness.processes.routers.RouterProcess` created over the
    management API, enrolled and running unless told otherwise (stopped after the test)."""
    made: list[RouterProcess] = []

    def make(*, enroll: bool = True, start: bool = True) -> RouterProcess:
        router = RouterProcess(admin, ziti_unique("er"), tmp_path)
        made.append(router)
        router.create()
        if enroll:
            router.enroll()
        if enroll and start:
            router.start()
        return router

    yield make
    for router in made:
        router.stop()


@pytest.fixture
def timeline(network):
    recorder = Timeline(network.controller.events)
    yield recorder
    recorder.close()


@pytest.fixture
def ctrl_log():
    with warnings_of("controller.ctrl") as lines:
        yield lines
