"""The controller's listeners: both ports bound before either serves; a busy port leaves nothing bound."""

from __future__ import annotations

import socket

import pytest

from controller.app import create_app
from controller.config import Config
from controller.server.lifecycle import FREE_PORT_FLOOR, ListenerError, Listeners, ephemeral_ports, free_port
from controller.server.serve import listeners


@pytest.fixture
def app(tmp_path):
    app = create_app(Config(data_dir=tmp_path))
    yield app
    app.controller.close()


def _group(app, port: int, http_port: int | None) -> Listeners:
    return Listeners("127.0.0.1", listeners(lambda: app, "127.0.0.1", port=port, http_port=http_port))


def test_without_an_http_port_only_https_is_bound(app):
    group = _group(app, 0, None).start()
    schemes = [server.scheme for _, server in group.servers]
    group.stop()
    assert schemes == ["https"]


def test_https_and_http_are_bound_then_served(app):
    group = _group(app, 0, free_port()).start()
    try:
        with socket.create_connection(("127.0.0.1", group.port("HTTP")), timeout=5) as sock:
            sock.sendall(b"GET /edge/client/v1/version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert sock.recv(100).startswith(b"HTTP/1.1 200")
    finally:
        assert group.stop()


def test_a_busy_http_port_raises_and_releases_the_https_port(app):
    https_port = free_port()
    with socket.create_server(("127.0.0.1", 0)) as busy, pytest.raises(ListenerError, match="--http-port"):
        _group(app, https_port, busy.getsockname()[1]).start()
    with socket.create_server(("127.0.0.1", https_port)):
        pass  # the HTTPS port was released


def test_a_free_port_is_one_the_kernel_does_not_hand_out_itself():
    """Picked below the ephemeral range: an outgoing connection's local end cannot take it before the bind."""
    low, _ = ephemeral_ports()
    ports = [free_port() for _ in range(20)]
    assert all(FREE_PORT_FLOOR <= port < low for port in ports)
    assert len(set(ports)) > 1  # picked at random, not one fixed port
    for port in ports[:3]:
        with socket.create_server(("127.0.0.1", port)):
            pass
