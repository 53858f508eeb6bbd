"""Shared fixtures: a fresh in-process app per test, one real waitress server per session."""
from __future__ import annotations

import itertools

import pytest

from controller.app import create_app
from controller.clock import FrozenClock
from controller.config import Config
from controller.serve import ThreadedServer
from harness.clients import Api
from harness.transport import SwappableApp, inprocess, over_http

ADMIN = ("admin", "admin")
_names = itertools.count()


@pytest.fixture(scope="session")
def http_server():
    """One waitress server on 127.0.0.1 whose app each test swaps in."""
    holder = SwappableApp()
    server = ThreadedServer(holder, "127.0.0.1", 0).start()
    yield holder, server
    server.stop()


@pytest.fixture
def clock():
    return FrozenClock("2025-06-01T12:00:00Z")


@pytest.fixture
def config():
    return Config()


@pytest.fixture
def controller_app(config, clock):
    app = create_app(config, clock=clock)
    yield app
    app.controller.close()


@pytest.fixture(params=["inprocess", "http"])
def mode(request):
    return request.param


@pytest.fixture
def api(controller_app, mode, request):
    """Anonymous access to both APIs, in-process or over a real socket."""
    if mode == "inprocess":
        http = inprocess(controller_app)
    else:
        holder, server = request.getfixturevalue("http_server")
        holder.app = controller_app
        http = over_http(server.url)
    with http:
        yield Api(http)


@pytest.fixture
def admin(api):
    """The default admin's management session."""
    return api.login(*ADMIN)


@pytest.fixture
def unique():
    """A unique name prefix for this test."""
    return lambda stem="x": f"{stem}-{next(_names):05d}"


@pytest.fixture
def make_identity(admin, unique):
    """Create an identity (optionally with a password login); return its id."""

    def make(name=None, *, is_admin=False, password=None, username=None, **fields):
        body = {"name": name or unique("identity"), "type": "User", "isAdmin": is_admin, **fields}
        identity_id = admin.create("identities", body)
        if password:
            admin.create("authenticators", {"identityId": identity_id, "method": "updb",
                                            "username": username or body["name"], "password": password})
        return identity_id

    return make
