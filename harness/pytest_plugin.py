"""The harness's pytest plugin (registered by entry point ``pytest11``).

Fixtures, as in pytest-httpserver a pair: one real HTTP server per session
(``http_server``) whose app each test swaps for a fresh in-process controller
(``controller_app``, in memory, with a ``FrozenClock``). ``controller_mode``
chooses how tests talk to it:

* ``--controller-mode=inprocess|http|both`` (default both: each test runs twice);
* ``--controller-url URL`` attaches to an external controller instead (tests
  that need the clock or the app are skipped there).

Data plane: ``ziti_quickstart`` (what ``ziti edge quickstart`` gives: an HTTPS
controller, a running edge router, a fresh service and enrolled dialer and
binder identity files) on one session-wide ``ziti_quickstart_controller``.

Client fixtures: ``ziti`` (anonymous :class:`~harness.client.ZitiClient`),
``ziti_admin`` (logged in as admin; ``--controller-auth=oidc-c|oidc-go`` logs in by OIDC), ``network`` (a network file applied; mark a
test with ``@pytest.mark.network("path.yaml")``), and factories
``make_identity``, ``make_service``, ``make_service_policy``.
"""
from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from controller.app import create_app
from controller.clock import FrozenClock
from controller.config import Config
from controller.serve import ThreadedServer
from harness.client import ZitiClient
from harness.transport import SwappableApp

_counter = itertools.count()


def pytest_addoption(parser):
    group = parser.getgroup("ziti", "edge controller harness")
    group.addoption("--controller-mode", choices=["inprocess", "http", "both"], default="both",
                    help="run controller tests in-process, over a real HTTP server, or both (default)")
    group.addoption("--controller-url", default=None, help="attach to an external controller at this URL")
    group.addoption("--controller-admin", default="admin:admin", help="admin username:password for --controller-url")
    group.addoption("--controller-auth", choices=["legacy", "oidc-c", "oidc-go"], default="legacy",
                    help="how ziti_admin logs in: /authenticate (default) or OIDC in the C or Go SDK's style")


def pytest_configure(config):
    config.addinivalue_line("markers", "network(path): apply this network file before the test")


def pytest_generate_tests(metafunc):
    if "controller_mode" in metafunc.fixturenames:
        if metafunc.config.getoption("controller_url"):
            modes = ["external"]
        else:
            chosen = metafunc.config.getoption("controller_mode")
            modes = ["inprocess", "http"] if chosen == "both" else [chosen]
        metafunc.parametrize("controller_mode", modes, scope="function")


def _external(request) -> str | None:
    return request.config.getoption("controller_url")


@pytest.fixture(scope="session")
def http_server():
    """One HTTP server on 127.0.0.1 whose app each test swaps in."""
    holder = SwappableApp()
    server = ThreadedServer(holder, "127.0.0.1", 0).start()
    yield holder, server
    server.stop()


@pytest.fixture
def clock(request):
    """The frozen clock of the test's controller: advance it instead of sleeping."""
    if _external(request):
        pytest.skip("time travel needs an in-process controller")
    return FrozenClock("2025-06-01T12:00:00Z")


@pytest.fixture
def config():
    return Config()


@pytest.fixture
def controller_app(config, clock):
    """A fresh controller app on in-memory storage."""
    app = create_app(config, clock=clock)
    yield app
    app.controller.close()


@pytest.fixture
def mode(controller_mode):
    """Alias of ``controller_mode``."""
    return controller_mode


@pytest.fixture
def ziti(request, controller_mode):
    """An anonymous client of the test's controller, in the chosen mode."""
    if controller_mode == "external":
        client = ZitiClient.connect(_external(request), verify=False)
    elif controller_mode == "inprocess":
        client = ZitiClient.in_process(request.getfixturevalue("controller_app"))
    else:
        holder, server = request.getfixturevalue("http_server")
        holder.app = request.getfixturevalue("controller_app")
        client = ZitiClient.connect(server.url)
    if controller_mode != "external":
        # token ages are measured on the controller's frozen clock, so refreshes follow clock.advance
        frozen = request.getfixturevalue("clock")
        client.now = lambda: frozen.now().timestamp()
    with client:
        yield client


@pytest.fixture
def auth_style(request):
    """``None`` for legacy logins, else the OIDC style (``c`` or ``go``) chosen by ``--controller-auth``."""
    chosen = request.config.getoption("controller_auth")
    return None if chosen == "legacy" else chosen.split("-", 1)[1]


@pytest.fixture
def ziti_admin(request, ziti, auth_style):
    """The same client logged in as the default admin (legacy or OIDC, see ``--controller-auth``)."""
    username, _, password = request.config.getoption("controller_admin").partition(":")
    ziti.login(username, password, oidc=auth_style)
    return ziti


@pytest.fixture
def unique():
    """Unique name prefixes for this test (fresh fixtures, filter by prefix)."""
    return lambda stem="x": f"{stem}-{next(_counter):05d}"


@pytest.fixture
def network(request, ziti_admin):
    """Apply the network file named by ``@pytest.mark.network(path)``; return the Network."""
    from harness.network import Network, apply

    marker = request.node.get_closest_marker("network")
    if marker is None:
        pytest.fail("the network fixture needs @pytest.mark.network('path.yaml')")
    path = Path(marker.args[0])
    if not path.is_absolute():
        path = Path(request.node.fspath).parent / path
    loaded = Network.from_yaml(path)
    apply(ziti_admin, loaded)
    return loaded


@pytest.fixture
def make_identity(ziti_admin, unique):
    """Factory: create an identity (optionally with a password); return its detail."""

    def make(name=None, *, password=None, username=None, **fields):
        body = {"name": name or unique("identity"), "type": "User", "isAdmin": False, **fields}
        created = ziti_admin.management.create_identity(body=body)
        if password:
            ziti_admin.management.create_authenticator(body={"identityId": created["id"], "method": "updb",
                                                             "username": username or body["name"], "password": password})
        return ziti_admin.management.detail_identity(created["id"])

    return make


@pytest.fixture
def make_service(ziti_admin, unique):
    """Factory: create a service; return its detail."""

    def make(name=None, **fields):
        body = {"name": name or unique("service"), "encryptionRequired": True, **fields}
        created = ziti_admin.management.create_service(body=body)
        return ziti_admin.management.detail_service(created["id"])

    return make


@pytest.fixture
def make_service_policy(ziti_admin, unique):
    """Factory: create a service policy (Dial, AnyOf by default); return its detail."""

    def make(identity_roles=("#all",), service_roles=("#all",), *, type="Dial", name=None, **fields):
        body = {"name": name or unique("sp"), "type": type, "semantic": "AnyOf", "identityRoles": list(identity_roles),
                "serviceRoles": list(service_roles), **fields}
        created = ziti_admin.management.create_service_policy(body=body)
        return ziti_admin.management.detail_service_policy(created["id"])

    return make


@pytest.fixture(scope="session")
def ziti_quickstart_controller():
    """A controller on free loopback ports with its edge router and the quickstart policies."""
    from harness.server import LocalController

    with LocalController(router=True, quickstart_policies=True) as local:
        yield local


@pytest.fixture
def ziti_quickstart(ziti_quickstart_controller, tmp_path, unique):
    """A fresh service with enrolled dialer and binder identity files (``harness.quickstart.Quickstart``)."""
    from harness.quickstart import new_quickstart

    local = ziti_quickstart_controller
    with ZitiClient.connect(local.url) as admin:
        admin.login("admin", "admin")
        yield new_quickstart(admin, tmp_path, unique("qs"), controller_url=local.https_url, router_url=local.router.url)
