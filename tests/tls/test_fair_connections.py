"""Fair connections: one address holding many idle connections cannot lock other addresses out.

The flooder connects from 127.0.0.1, the probes from 127.0.0.2 (the whole of 127/8 is loopback on Linux).
"""

from __future__ import annotations

import logging
import socket
import ssl
import time
from contextlib import ExitStack

import pytest

from controller.pki import ControllerPKI
from controller.server.serve import Limits, ThreadedServer
from controller.server.tls import TLSServer

FLOODER, PROBER = "127.0.0.1", "127.0.0.2"


def hello_app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "5")])
    return [b"hello"]


def connect(port: int, source: str) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(5)
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    return sock


def probe(port: int, tls: bool = False) -> bytes:
    """One request from the other address (over TLS when ``tls``); its status line."""
    with connect(port, PROBER) as raw:
        sock = raw
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
            sock = context.wrap_socket(raw)
        sock.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        return sock.recv(4096).split(b"\r\n", 1)[0]


def closed_by_server(sock: socket.socket) -> bool:
    """True once the server closed ``sock`` (bounded by its timeout); False if it stays open."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def refused(port: int, source: str = FLOODER) -> bool:
    """Whether a new connection from ``source`` is closed by the server at once."""
    try:
        sock = connect(port, source)
    except ConnectionResetError:  # the reset came before connect() returned
        return True
    with sock:
        return closed_by_server(sock)


def wait_until(condition, limit: float = 10.0) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, "the server never got there"
        time.sleep(0.01)


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_one_address_over_its_cap_is_closed_at_once_and_others_still_get_in(tmp_path, tls, caplog):
    limits = Limits(max_connections=40, max_per_peer=20, idle=60, request=60, handshake=60)
    if tls:
        server = TLSServer(hello_app, "127.0.0.1", 0, ControllerPKI.load_or_create(tmp_path), threads=2, limits=limits)
    else:
        server = ThreadedServer(hello_app, "127.0.0.1", 0, threads=2, limits=limits)
    with server, ExitStack() as held, caplog.at_level(logging.WARNING, logger="controller.server.serve"):
        flood = [held.enter_context(connect(server.port, FLOODER)) for _ in range(20)]
        wait_until(lambda: server.per_peer.get(FLOODER) == 20)
        started = time.monotonic()
        assert all(refused(server.port) for _ in range(40))  # past the global cap too: answered at once, not queued
        assert time.monotonic() - started < 4.5
        for sock in flood[:3]:
            sock.settimeout(0.05)
            assert not closed_by_server(sock)  # the first 20 are kept: only the overflow is refused
        # the other address is served in full: a handshake (over TLS) and an answer, not only a kept socket
        assert all(probe(server.port, tls) == b"HTTP/1.1 200 OK" for _ in range(15))
        lines = [r.getMessage() for r in caplog.records if "per-address cap" in r.getMessage()]
        assert lines == [
            f"connections: {FLOODER} holds 20 connections (the per-address cap); closing its new ones at once"
        ]


def test_a_closed_connection_frees_its_slot(tmp_path):
    with ThreadedServer(hello_app, "127.0.0.1", 0, threads=2, limits=Limits(max_per_peer=2)) as server:
        first, second = connect(server.port, FLOODER), connect(server.port, FLOODER)
        wait_until(lambda: server.per_peer.get(FLOODER) == 2)
        assert refused(server.port)
        first.close()
        wait_until(lambda: server.per_peer.get(FLOODER) == 1)
        with connect(server.port, FLOODER) as again:
            again.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert again.recv(4096).startswith(b"HTTP/1.1 200 OK")
        second.close()
        wait_until(lambda: FLOODER not in server.per_peer)


def test_the_default_cap_is_well_below_the_global_one():
    limits = Limits()
    assert limits.max_per_peer == 512 and limits.max_per_peer * 10 < limits.max_connections


def test_the_global_cap_still_holds_for_every_address():
    limits = Limits(max_connections=10, max_per_peer=100, idle=60, request=60)
    with ThreadedServer(hello_app, "127.0.0.1", 0, threads=2, limits=limits) as server, ExitStack() as held:
        for _ in range(10):
            held.enter_context(connect(server.port, FLOODER))
        wait_until(lambda: len(server.connections) == 10)
        assert refused(server.port, PROBER)
