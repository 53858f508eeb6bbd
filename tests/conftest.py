"""Project fixtures on top of the harness plugin (ziti_app, ziti_clock, ziti_http_server, ziti_mode, ziti_unique...)."""

from __future__ import annotations

import gc
import os
import sys

import pytest
from hypothesis import settings

from controller.config import Config
from controller.console import without_unused_imports
from controller.heap import freeze_started_heap
from harness.client import ZitiClient
from harness.client.transport import SwappableApp, inprocess
from harness.testing.fixtures import identity_factory, service_factory
from tests import sizes
from tests.real_sdk import real_sdk  # noqa: F401  (a fixture every real-SDK test uses)

# -- bytecode: compiled once, not in every process ------------------------------------------------
# The suite starts ~400 Python processes of this checkout (command lines, routers, controllers, kernels)
# and xdist workers that each collect every test module. Where PYTHONDONTWRITEBYTECODE is set (as on the
# shared machine this suite is timed on), each compiled the checkout from source and pytest rewrote every
# test module's asserts again: 2.2 s of CPU per worker's collection (5.2 -> 3.0 s) and 10-30 ms per
# command line start. The run writes __pycache__ (ignored by git) as Python does by default; workers and
# subprocesses inherit this process's environment, so the variable goes before they start.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# -- the cyclic collector in a test process ------------------------------------------------------
# A test process keeps a large heap for the whole run (every imported module and collected test, and
# the ~130,000 objects of jsonschema's IRI grammar from its first use), and each full collection walks
# all of it (~0.15 s). With the default thresholds (700, 10, 10) one came every ~100 tests: measured
# on tests/api + tests/unit, 5-6 s of 35 s CPU in the collector. Collecting the youngest generation
# every 10,000 allocations instead of 700 still collects every cycle, and cut that to ~2 s.
gc.set_threshold(10_000, 10, 10)


def pytest_collection_finish(session):
    """Once the tests are collected, the process's heap so far (every imported module and collected test) leaves
    the cyclic collector, as a serving controller's does (``controller.heap``): collections then walk only what
    the tests made. Measured on tests/api + tests/unit in one process: 2.9 -> 1.8 s of CPU in the collector
    (0.9 s of it the five full collections pytest runs at the end of a session, over every collected item).
    Collected first: unlike a controller's start, imports and collection leave cyclic garbage behind."""
    gc.collect()
    freeze_started_heap()


# -- no rfc3987-syntax grammar nor trio, as in the command lines (the grammar: 1.2 s of CPU per test process
# at its first invalid body or notebook read; 3-5 s on a busy machine, past httpx's 5 s read timeout for an
# admin-matrix request over HTTP)
without_unused_imports()

# -- test sizes: bounded by default, full with --long or ZITI_LONG=1 (tests/sizes.py) --------------
#: examples of a property test that names none (each long property test names its own, through ``sizes``)
settings.register_profile("bounded", max_examples=30)
settings.register_profile("long", max_examples=100)  # Hypothesis's own default


def pytest_addoption(parser):
    parser.addoption("--long", action="store_true", help="full-size property and kill -9 runs (or ZITI_LONG=1)")


def pytest_configure(config):
    if config.getoption("--long"):
        os.environ[sizes.ENV] = "1"
    settings.load_profile("long" if sizes.is_long() else "bounded")


ADMIN = ("admin", "admin")


#: the plugin's factories, declared to return ids (the project's tests compare and pass ids)
make_identity = identity_factory(returns="id")
make_service = service_factory(returns="id")


# -- certificate clients: in-process peer chains or real TLS on 127.0.0.1 ------------


@pytest.fixture(scope="session")
def https_server():
    """One TLS listener (client certs requested, never verified in the handshake) whose app each test swaps in."""
    from controller.pki.loader import load_pki
    from controller.server.tls import TLSServer

    holder = SwappableApp()
    server = TLSServer(holder, "127.0.0.1", 0, load_pki(Config()), threads=4).start()
    yield holder, server, {}
    server.stop()


def _trust_pem(server, cache: dict, roots_only: bool = False) -> str:
    """The CA bundle as an SDK learns it: ``cacerts`` over a first, unverified connection.

    ``roots_only`` keeps the self-signed certificates alone, so OpenSSL cannot
    complete a client chain from its trust store (a client sending its leaf only).
    """
    if "pem" not in cache:
        import httpx

        from harness.client.enroll import parse_cacerts, pem_bundle

        with httpx.Client(verify=False, timeout=10) as http:  # noqa: S501 - the SDK's first look, on purpose
            body = http.get(f"https://127.0.0.1:{server.port}/.well-known/est/cacerts").text
        certs = parse_cacerts(body)
        cache["pem"] = pem_bundle(certs)
        cache["roots"] = pem_bundle([c for c in certs if c.subject == c.issuer])
    return cache["roots" if roots_only else "pem"]


@pytest.fixture(params=["inprocess", "tls"])
def cert_mode(request):
    return request.param


@pytest.fixture
def make_cert_api(ziti_app, cert_mode, request):
    """Factory: a ``ZitiClient`` whose connection presents ``client``'s chain (or no certificate).

    ``send_chain=False`` presents the leaf alone (no intermediates).
    """
    import httpx

    from harness.client import pki as hp

    opened = []

    def make(client=None, *, send_chain: bool = True) -> ZitiClient:
        presented = (
            None if client is None else hp.CertKey(client.cert, client.key, list(client.chain) if send_chain else [])
        )
        if cert_mode == "inprocess":
            http = inprocess(ziti_app, peer_certs=[] if presented is None else [presented.cert, *presented.chain])
        else:
            holder, server, cache = request.getfixturevalue("https_server")
            holder.app = ziti_app
            ctx = hp.client_ssl_context(_trust_pem(server, cache, roots_only=not send_chain), presented)
            http = httpx.Client(base_url=f"https://127.0.0.1:{server.port}", verify=ctx, timeout=10)
        opened.append(http)
        return ZitiClient(http)

    yield make
    for http in opened:
        http.close()


@pytest.fixture
def cert_client_of(ziti_app, cert_mode, request):
    """Factory: a ZitiClient presenting an enrolled identity's certificate, in-process or over real TLS."""
    from harness.dataplane import flows

    opened = []

    def make(identity):
        if cert_mode == "inprocess":
            client = flows.cert_client(ziti_app, identity)
        else:
            holder, server, _ = request.getfixturevalue("https_server")
            holder.app = ziti_app
            client = flows.cert_client(ziti_app, identity, url=f"https://127.0.0.1:{server.port}")
        clock = request.getfixturevalue("ziti_clock")
        client.now = lambda: clock.now().timestamp()
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.close()


@pytest.fixture
def cert_api(make_cert_api):
    """Anonymous access on a certificate-capable connection (in-process peer chains or real TLS)."""
    return make_cert_api()


@pytest.fixture
def cert_admin(make_cert_api):
    """The default admin's session on a certificate-capable connection (same mode as ``make_cert_api``)."""
    return make_cert_api().signed_in(*ADMIN)


# -- network model: services, edge routers, policies, client sessions ----------------


@pytest.fixture
def make_edge_router(ziti_admin, ziti_unique):
    """Create an edge router; return its id."""

    def make(name=None, *, attrs=(), **fields):
        return ziti_admin.create(
            "edge-routers", {"name": name or ziti_unique("er"), "roleAttributes": list(attrs), **fields}
        )

    return make


@pytest.fixture
def make_policy(ziti_admin, ziti_unique):
    """Create a policy of ``collection`` (``service-policies`` needs ``type``); return its id."""

    def make(collection, *, semantic="AnyOf", name=None, **fields):
        return ziti_admin.create(collection, {"name": name or ziti_unique("policy"), "semantic": semantic, **fields})

    return make


@pytest.fixture
def make_client(ziti, make_identity, ziti_unique):
    """Create an identity with a password and log it in on the client API; return ``(identity_id, ZitiClient)``."""

    def make(*, attrs=(), config_types=None, is_admin=False, **fields):
        name = ziti_unique("client")
        identity_id = make_identity(
            name, password="client-pass", roleAttributes=list(attrs), is_admin=is_admin, **fields
        )
        body = {} if config_types is None else {"configTypes": list(config_types)}
        return identity_id, ziti.signed_in(name, "client-pass", api="client", **body)

    return make


# -- external JWT signers: a JWKS endpoint on 127.0.0.1 ----------------------------------


@pytest.fixture(scope="session")
def jwks_server():
    """One JWKS endpoint (``http.server`` in a thread) for the whole session; tests publish under unique paths."""
    from tests.api.jwt_support import JwksServer

    server = JwksServer().start()
    yield server
    server.stop()


@pytest.fixture
def raw(ziti_app):
    """An anonymous in-process client's ``httpx.Client``, for wire-level checks (OIDC flows, envelopes)."""
    with ZitiClient.in_process(ziti_app) as client:
        yield client.http
