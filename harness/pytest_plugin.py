"""The harness's pytest plugin (registered by entry point ``pytest11``).

Every fixture is named ``ziti_*`` so none collides with a project's own
``config``, ``clock`` or ``network``. As in pytest-httpserver, a pair: one real
HTTP server per session (``ziti_http_server``) whose app each test swaps for
a fresh in-process controller (``ziti_app``, in memory, with the frozen clock
``ziti_clock``). ``ziti_mode`` says how tests talk to it:

* ``--controller-mode=inprocess`` (the default: each test runs once, without
  sockets), ``http`` (a real socket) or ``both`` (each test runs in both);
* ``--controller-url URL`` attaches to an external controller instead (tests
  that need the clock or the app are skipped there; a URL where no controller
  answers is one usage error line). There what the factories and ``ziti_network``
  create is deleted after each test (``ziti_cleanup``) and ``ziti_unique`` names
  carry a per-run mark, so a project's tests run again against the same controller.

Clients: ``ziti`` (anonymous :class:`~harness.client.ZitiClient`), ``ziti_admin``
(another client on its connection, logged in as admin; ``--controller-auth=oidc-c|oidc-go`` logs in by OIDC); ``ziti_network`` (a network file applied: mark the test with
``@pytest.mark.network("path.yaml")``); factories ``ziti_make_identity``,
``ziti_make_service``, ``ziti_make_service_policy`` (role lists accept ``@name``).
Declare factories with other defaults with :mod:`harness.testing.fixtures`.
Data plane: ``ziti_quickstart`` (what ``ziti edge quickstart`` gives: an HTTPS
controller, a running edge router, a fresh service and enrolled dialer and
binder identity files) on one session-wide ``ziti_quickstart_controller``.
Routers as processes (``harness.processes.routers``): ``ziti_router_network`` (session-wide: a controller with
its control channel and two routers run with ``python -m router``, by name, each with ``kill()``,
``restart()``, ``pause()``, ``wait_online()``...), ``ziti_router_quickstart`` (a fresh service and
enrolled identity files on it) and the factory ``ziti_make_router_network(n=2)``.
A controller cluster as processes (``harness.processes.cluster``): ``ziti_cluster`` (three members, ``kill(i)``,
``pause(i)``, ``resume(i)``, ``restart(i)``, ``leader()``, ``client(i)``) and the factory ``ziti_make_cluster(size)``.
"""

from __future__ import annotations

import itertools
import re
import secrets
from pathlib import Path

import pytest

from controller.clock import FrozenClock
from controller.config import Config
from controller.embedded import EmbeddedController
from controller.server.serve import ThreadedServer
from harness import extra
from harness.client import ZitiClient
from harness.client.transport import SwappableApp
from harness.testing.fixtures import identity_factory, service_factory, service_policy_factory

_counter = itertools.count()
#: this run's mark in generated names: a second run against one external controller never meets the first's
_RUN = secrets.token_hex(3)


def pytest_addoption(parser):
    group = parser.getgroup("ziti", "edge controller harness")
    group.addoption(
        "--controller-mode",
        choices=["inprocess", "http", "both"],
        default="inprocess",
        help="run controller tests in-process (default), over a real HTTP server, or both",
    )
    group.addoption(
        "--controller-auth",
        choices=["legacy", "oidc-c", "oidc-go"],
        default="legacy",
        help="how ziti_admin logs in: /authenticate (default) or OIDC in the C or Go SDK's style",
    )
    group.addoption("--controller-url", default=None, help="attach to an external controller at this URL")
    group.addoption("--controller-admin", default="admin:admin", help="admin username:password for --controller-url")


def pytest_configure(config):
    config.addinivalue_line("markers", "network(path): apply this network file before the test")
    url = config.getoption("controller_url", None)
    if url and not hasattr(config, "workerinput"):  # checked once, by the main process
        _check_reachable(url)
        _check_admin_login(url, config.getoption("controller_admin"))


def _check_reachable(url: str) -> None:
    """A usage error (one line, pytest's exit code 4) when nothing answers at ``--controller-url``."""
    import httpx

    try:
        with httpx.Client(verify=False, timeout=10) as http:
            http.get(url.rstrip("/") + "/edge/client/v1/version")
    except (httpx.TransportError, httpx.InvalidURL, httpx.UnsupportedProtocol) as ex:
        reason = str(ex).splitlines()[0] if str(ex) else type(ex).__name__
        raise pytest.UsageError(
            f"--controller-url {url}: no controller answers there ({reason}); start one (ziti-controller) "
            "or fix the URL"
        ) from None


def _check_admin_login(url: str, admin: str) -> None:
    """A usage error (one line) when ``--controller-admin`` cannot log in at ``--controller-url``, or the URL's
    scheme is not the port's (``http://`` sent to the HTTPS port), instead of a traceback in every test."""
    import httpx

    username, colon, password = admin.partition(":")
    if not (username and colon):
        raise pytest.UsageError(f"--controller-admin {admin!r}: give the admin's login as USER:PASSWORD")
    try:
        with httpx.Client(verify=False, timeout=10) as http:
            response = http.post(
                url.rstrip("/") + "/edge/management/v1/authenticate",
                params={"method": "password"},
                json={"username": username, "password": password},
            )
    except httpx.TransportError as ex:  # e.g. plain HTTP to the HTTPS port, reset instead of answered
        raise pytest.UsageError(
            f"--controller-url {url}: closed the connection ({str(ex).splitlines()[0] if str(ex) else type(ex).__name__}); "
            "the HTTPS port needs https://, the plain HTTP port http://"
        ) from None
    try:
        code = response.json()["error"]["code"] if response.status_code >= 400 else None
    except (ValueError, KeyError, TypeError):
        raise pytest.UsageError(
            f"--controller-url {url}: answered {response.status_code} without a controller's error envelope; "
            "the HTTPS port needs https://, the plain HTTP port http://"
        ) from None
    if code is not None:
        raise pytest.UsageError(
            f"--controller-admin {username}:...: the controller at {url} refused this login ({code}); "
            "give its admin's USER:PASSWORD"
        )


def pytest_collection_modifyitems(session, config, items):
    """Stop with one line when a collected test uses the ``ziti_*`` fixtures without the ``harness`` extra."""
    if not any(name.startswith("ziti") for item in items for name in getattr(item, "fixturenames", ())):
        return
    if names := extra.missing():
        pytest.exit(f"the ziti_* fixtures: {extra.needs_extra(names)}", returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.hookimpl(tryfirst=True)  # before the terminal reporter files it as an error with its traceback
def pytest_collectreport(report):
    """Stop with the same line when a test file fails to import for want of the ``harness`` extra (its
    ``from harness.dataplane.sync import echo`` needs PyNaCl), instead of a collection error per file."""
    if not report.failed:
        return
    text = str(report.longrepr)
    named = re.findall(r"No module named '(\w+)|import of (\w+) halted", text)
    names = sorted({name for pair in named for name in pair if name in extra.HARNESS_EXTRA})
    if names and "harness" in text:
        pytest.exit(
            f"{report.nodeid or 'a test file'} imports the harness: {extra.needs_extra(names)}",
            returncode=pytest.ExitCode.USAGE_ERROR,
        )


def pytest_generate_tests(metafunc):
    if "ziti_mode" in metafunc.fixturenames:
        if metafunc.config.getoption("controller_url"):
            modes = ["external"]
        else:
            chosen = metafunc.config.getoption("controller_mode")
            modes = ["inprocess", "http"] if chosen == "both" else [chosen]
        metafunc.parametrize("ziti_mode", modes, scope="function")


def _external(request) -> str | None:
    return request.config.getoption("controller_url")


@pytest.fixture(scope="session")
def ziti_http_server():
    """One HTTP server on 127.0.0.1 whose app each test swaps in."""
    holder = SwappableApp()
    server = ThreadedServer(holder, "127.0.0.1", 0).start()
    yield holder, server
    server.stop()


@pytest.fixture
def ziti_clock(request):
    """The frozen clock of the test's controller: advance it instead of sleeping."""
    if _external(request):
        pytest.skip("time travel needs an in-process controller")
    return FrozenClock("2025-06-01T12:00:00Z")


@pytest.fixture
def ziti_config():
    """The test controller's :class:`~controller.config.Config` (override it to change settings)."""
    return Config()


@pytest.fixture
def ziti_app(ziti_config, ziti_clock):
    """A fresh controller app on in-memory storage."""
    with EmbeddedController(ziti_config, clock=ziti_clock) as controller:
        yield controller.app


@pytest.fixture
def ziti(request, ziti_mode, ziti_config):
    """An anonymous client of the test's controller, in the chosen mode.

    (``ziti_config`` is named so a test can parametrize it; the app is only built when the mode needs it.)"""
    if ziti_mode == "external":
        client = ZitiClient.connect(_external(request), verify=False)
    elif ziti_mode == "inprocess":
        client = ZitiClient.in_process(request.getfixturevalue("ziti_app"))
    else:
        holder, server = request.getfixturevalue("ziti_http_server")
        holder.app = request.getfixturevalue("ziti_app")
        client = ZitiClient.connect(server.url)
    if ziti_mode != "external":
        # token ages are measured on the controller's frozen clock, so refreshes follow ziti_clock.advance
        frozen = request.getfixturevalue("ziti_clock")
        client.now = lambda: frozen.now().timestamp()
    with client:
        yield client


@pytest.fixture
def ziti_auth_style(request):
    """``None`` for legacy logins, else the OIDC style (``c`` or ``go``) chosen by ``--controller-auth``."""
    chosen = request.config.getoption("controller_auth")
    return None if chosen == "legacy" else chosen.split("-", 1)[1]


@pytest.fixture
def ziti_admin(request, ziti, ziti_auth_style):
    """Another client on ``ziti``'s connection, logged in as the default admin (legacy or OIDC, see
    ``--controller-auth``; it logs in again on a 401); ``ziti`` itself stays anonymous."""
    username, _, password = request.config.getoption("controller_admin").partition(":")
    admin = ziti.with_token(None)
    admin.now = ziti.now  # token ages on the frozen clock, as ziti's
    admin.login(username, password, oidc=ziti_auth_style)
    return admin


@pytest.fixture
def ziti_unique(request):
    """Unique names for this test (fresh fixtures, filter by prefix).

    Against ``--controller-url`` the names also carry this run's mark, so they never meet an earlier run's.
    """
    run = f"{_RUN}-" if _external(request) else ""
    return lambda stem="x": f"{stem}-{run}{next(_counter):05d}"


class Cleanup:
    """What a test created on an external controller, deleted (newest first) when the test ends."""

    def __init__(self, url: str | None, admin: str):
        self.url, self.admin = url, admin
        self.created: list[tuple[str, str]] = []  # (delete operation, id)

    def add(self, delete_op: str, entity_id: str) -> None:
        if self.url:
            self.created.append((delete_op, entity_id))

    def run(self) -> None:
        if not self.created:
            return
        from harness.client import ApiError

        username, _, password = self.admin.partition(":")
        with ZitiClient.connect(self.url, verify=False) as admin:  # its own session: the test's may have changed
            admin.login(username, password)
            for delete_op, entity_id in reversed(self.created):
                try:
                    admin.management.call(delete_op, entity_id)
                except ApiError as ex:
                    if ex.status != 404:  # already gone (the test deleted it): fine
                        raise
        self.created.clear()


@pytest.fixture
def ziti_cleanup(request):
    """Against ``--controller-url``: ``add(delete_op, id)`` to delete an entity after the test (factories do)."""
    cleanup = Cleanup(_external(request), request.config.getoption("controller_admin"))
    yield cleanup
    cleanup.run()


@pytest.fixture
def ziti_network(request, ziti_admin, ziti_cleanup):
    """Apply the network file named by ``@pytest.mark.network(path)``; return the Network.

    Against ``--controller-url`` what the apply created is deleted after the test.
    """
    from harness.client.kinds import BY_KEY
    from harness.network import Network, apply

    marker = request.node.get_closest_marker("network")
    if marker is None:
        pytest.fail("the ziti_network fixture needs @pytest.mark.network('path.yaml')")
    path = Path(marker.args[0])
    if not path.is_absolute():
        path = Path(request.node.fspath).parent / path
    loaded = Network.from_yaml(path)
    steps = apply(ziti_admin, loaded)
    if _external(request):
        from harness.client.filters import name_is

        for step in steps:
            if step.action == "create":
                kind = BY_KEY[step.kind]
                for record in ziti_admin.management.iterate(kind.list_op, filter=name_is(step.name)):
                    ziti_cleanup.add(kind.delete_op, record["id"])
    return loaded


#: factories creating through ``ziti_admin`` and returning details (see harness.testing.fixtures)
ziti_make_identity = identity_factory()
ziti_make_service = service_factory()
ziti_make_service_policy = service_policy_factory()


@pytest.fixture(scope="session")
def ziti_quickstart_controller():
    """A controller on free loopback ports with its edge router and the quickstart policies."""
    from harness.processes.server import LocalController

    with LocalController(router=True, quickstart_policies=True) as local:
        yield local


@pytest.fixture
def ziti_quickstart(ziti_quickstart_controller, tmp_path, ziti_unique):
    """A fresh service with enrolled dialer and binder identity files (``harness.processes.quickstart.Quickstart``)."""
    from harness.processes.quickstart import new_quickstart

    local = ziti_quickstart_controller
    with ZitiClient.connect(local.url) as admin:
        admin.login("admin", "admin")
        yield new_quickstart(
            admin, tmp_path, ziti_unique("qs"), controller_url=local.https_url, router_url=local.router.url
        )


@pytest.fixture(scope="session")
def ziti_router_network(tmp_path_factory):
    """A controller with its control channel and two edge routers run as processes (``router-1``, ``router-2``).

    A :class:`~harness.processes.routers.RouterNetwork`: ``ziti_router_network["router-1"].kill()``; a test that
    stops a router starts it again (``restart()``) for the tests after it.
    """
    from harness.processes.routers import start_router_network

    network = start_router_network(2, folder=tmp_path_factory.mktemp("ziti-routers"))
    yield network
    network.stop()


@pytest.fixture
def ziti_router_quickstart(ziti_router_network, tmp_path, ziti_unique):
    """A fresh service with enrolled dialer and binder identity files on ``ziti_router_network``."""
    from harness.processes.quickstart import new_quickstart

    network = ziti_router_network
    return new_quickstart(
        network.admin,
        tmp_path,
        ziti_unique("rq"),
        controller_url=network.controller.https_url,
        router_url=next(iter(network)).url,
    )


@pytest.fixture
def ziti_make_router_network(tmp_path):
    """``make(n=2, **LocalController options)``: a fresh controller and ``n`` process routers, stopped after the test."""
    from harness.processes.routers import start_router_network

    made = []

    def make(n: int = 2, **options):
        network = start_router_network(n, folder=tmp_path / f"routers-{len(made)}", **options)
        made.append(network)
        return network

    yield make
    for network in made:
        network.stop()


@pytest.fixture
def ziti_make_cluster(tmp_path):
    """``make(size=3)``: a cluster of controller processes (``harness.processes.cluster.ZitiCluster``), stopped after the test."""
    from harness.processes.cluster import ZitiCluster

    made = []

    def make(size: int = 3, **options) -> ZitiCluster:
        cluster = ZitiCluster(size, root=tmp_path / f"cluster{len(made)}", **options)
        made.append(cluster)
        return cluster.start()

    yield make
    for cluster in made:
        cluster.close()


@pytest.fixture
def ziti_cluster(ziti_make_cluster):
    """Three controller processes forming one cluster (kill, pause, restart a member: ``harness.processes.cluster``)."""
    return ziti_make_cluster(3)
