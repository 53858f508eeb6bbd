"""``bind_listeners``: both ports bound before either serves; a busy port leaves nothing bound."""
from __future__ import annotations

import socket

import pytest

from controller.app import create_app
from controller.config import Config
from controller.serve import bind_listeners


@pytest.fixture
def app(tmp_path):
    app = create_app(Config(data_dir=tmp_path))
    yield app
    app.controller.close()


def test_without_an_http_port_only_https_is_bound(app):
    servers = bind_listeners(app, "127.0.0.1", 0, 0)
    for server in servers:
        server.stop()
    assert [server.scheme for server in servers] == ["https"]


def test_https_and_http_are_bound_then_served(app):
    https, http = bind_listeners(app, "127.0.0.1", 0, _free_port())
    try:
        for server in (https, http):
            server.start()
        with socket.create_connection(("127.0.0.1", http.port), timeout=5) as sock:
            sock.sendall(b"GET /edge/client/v1/version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert sock.recv(100).startswith(b"HTTP/1.1 200")
    finally:
        for server in (https, http):
            server.stop()


def test_a_busy_http_port_raises_and_releases_the_https_port(app):
    https_port = _free_port()
    with socket.create_server(("127.0.0.1", 0)) as busy, pytest.raises(OSError):
        bind_listeners(app, "127.0.0.1", https_port, busy.getsockname()[1])
    with socket.create_server(("127.0.0.1", https_port)):
        pass  # the HTTPS port was released


def _free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return probe.getsockname()[1]
