"""Slow, silent and idle clients cannot take either listener offline (issue 14, item 1).

Each listener runs with few workers; the hostile connections are raw sockets that
connect and send nothing, or send part of a request and stop, or finish one
request and stay open. Probes must still be answered, and each deadline closes
what it bounds. Waits are for the server to act on a socket, bounded by timeouts.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import httpx
import pytest

from controller.pki import ControllerPKI
from controller.server.serve import Limits, ThreadedServer
from controller.server.tls import TLSServer
from harness.client import pki as hp

PROBE_TIMEOUT = 3


def hello_app(environ, start_response):
    body = environ["wsgi.input"].read() or b"hello"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return ControllerPKI.load_or_create(tmp_path_factory.mktemp("pki"))


@pytest.fixture(params=["http", "https"])
def make_server(request, pki):
    """Factory of a started listener of the parameter's kind; all are stopped after the test."""
    started = []

    def make(threads: int = 2, **limits):
        if request.param == "https":
            server = TLSServer(hello_app, "127.0.0.1", 0, pki, threads=threads, limits=Limits(**limits))
        else:
            server = ThreadedServer(hello_app, "127.0.0.1", 0, threads=threads, limits=Limits(**limits))
        started.append(server.start())
        return server

    yield make
    for server in started:
        server.stop()


def probe_client(server, pki) -> httpx.Client:
    verify = hp.client_ssl_context(pki.ca_bundle_pem()) if server.scheme == "https" else False
    return httpx.Client(base_url=server.url, verify=verify, timeout=PROBE_TIMEOUT)


def connect(server, pki) -> socket.socket:
    """A raw socket to ``server``, TLS-wrapped (handshake done) for the HTTPS listener."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    if server.scheme == "https":
        sock = hp.client_ssl_context(pki.ca_bundle_pem()).wrap_socket(sock, server_hostname="localhost")
    return sock


def closed_by_server(sock: socket.socket, limit: float = 5.0, trickle: bytes = b"") -> bool:
    """Wait (bounded) until the server closes ``sock``, sending ``trickle`` whenever it is quiet."""
    sock.settimeout(0.1)
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            if sock.recv(4096) == b"":
                return True
        except TimeoutError:
            with contextlib.suppress(OSError):
                sock.sendall(trickle)
        except OSError:  # reset by the server
            return True
    return False


def test_two_hundred_silent_and_trickling_connections_leave_probes_answered(make_server, pki):
    server = make_server(threads=2)
    hostile = []
    try:
        for number in range(200):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=PROBE_TIMEOUT)
            if number % 2:  # half trickle a request head that never ends; half stay silent
                sock.sendall(b"\x16\x03\x01" if server.scheme == "https" else b"GET / HTTP/1.1\r\nHost: x\r\n")
            hostile.append(sock)
        with probe_client(server, pki) as probe:
            replies = [probe.post("/", content=f"probe {i}") for i in range(20)]
        assert [reply.text for reply in replies] == [f"probe {i}" for i in range(20)]
    finally:
        for sock in hostile:
            sock.close()


def test_silent_connection_is_closed_at_the_first_deadline(make_server):
    server = make_server(handshake=0.3, request=0.3)
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        assert closed_by_server(sock)


def test_trickling_a_request_does_not_extend_its_deadline(make_server, pki):
    server = make_server(request=0.5)
    with connect(server, pki) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        assert closed_by_server(sock, trickle=b"X")


def test_idle_keep_alive_connections_hold_no_worker(make_server, pki):
    server = make_server(threads=1)
    idle = [probe_client(server, pki) for _ in range(4)]
    try:
        for client in idle:  # each keeps its connection open after one request
            assert client.get("/").text == "hello"
        with probe_client(server, pki) as probe:
            assert probe.post("/", content="still served").text == "still served"
        assert idle[0].post("/", content="reused").text == "reused"
    finally:
        for client in idle:
            client.close()


def test_idle_keep_alive_connection_is_closed_at_the_idle_deadline(make_server, pki):
    server = make_server(idle=0.3)
    with connect(server, pki) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        assert closed_by_server(sock)


def test_stop_is_bounded_with_slow_clients_and_a_request_stuck_in_the_app(pki):
    release = threading.Event()

    def stuck_app(environ, start_response):
        release.wait(30)
        start_response("200 OK", [("Content-Length", "0")])
        return [b""]

    server = TLSServer(stuck_app, "127.0.0.1", 0, pki, threads=1).start()
    hostile = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(50)]
    try:
        with connect(server, pki) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            started = time.monotonic()
            server.stop(timeout=1.0)
            assert time.monotonic() - started < 3  # the bound the command line relies on, with slack
            assert closed_by_server(sock)
    finally:
        release.set()
        for sock in hostile:
            sock.close()
