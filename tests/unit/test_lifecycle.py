"""Listeners as a list: a failure to start stops those already up."""

from __future__ import annotations

import socket

import pytest

from controller.server.lifecycle import Listener, ListenerError, Listeners, check_ports
from controller.server.serve import ThreadedServer


def _hello(environ, start_response):
    start_response("200 OK", [("content-type", "text/plain")])
    return [b"hello"]


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def test_a_listener_that_cannot_bind_stops_the_ones_already_bound_and_none_serves():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        started = []

        def first(port):
            started.append(ThreadedServer(_hello, "127.0.0.1", port))
            return started[-1]

        group = Listeners(
            "127.0.0.1",
            [
                Listener("HTTP", "--http-port", 0, first),
                Listener("router", "--router-port", busy, lambda port: ThreadedServer(_hello, "127.0.0.1", port)),
            ],
        )
        with pytest.raises(ListenerError) as raised:
            group.start()
    assert str(raised.value).startswith(f"router port {busy} on 127.0.0.1 is in use")
    assert "--router-port PORT" in str(raised.value)
    assert not _listening(started[0].port)


def test_check_ports_names_the_first_port_in_use_and_passes_free_ones():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        free = Listener("HTTPS", "--port", 0, lambda port: None)
        check_ports("127.0.0.1", [free])
        with pytest.raises(ListenerError, match=f"HTTP port {busy} .* --http-port PORT"):
            check_ports("127.0.0.1", [free, Listener("HTTP", "--http-port", busy, lambda port: None)])


def test_stop_stops_every_listener_and_reports_success():
    group = Listeners(
        "127.0.0.1",
        [Listener(name, "--x", 0, lambda port: ThreadedServer(_hello, "127.0.0.1", port)) for name in ("a", "b")],
    ).start()
    ports = [group.port("a"), group.port("b")]
    assert all(_listening(port) for port in ports)
    assert group.stop() is True
    assert not any(_listening(port) for port in ports)
