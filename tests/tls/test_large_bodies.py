"""A few exact paths may take bodies past ``max_body`` (the import extension), a few connections at a time."""

from __future__ import annotations

import socket

import pytest

from controller.server.serve import Limits, ThreadedServer
from tests.tls.test_http_framing import body_of, echo_app, exchange

LIMITS = Limits(max_body=1000, max_head=4096, large_bodies=(("/in", 5000),), large_bodies_at_once=1)


@pytest.fixture
def server():
    with ThreadedServer(echo_app, "127.0.0.1", 0, threads=2, limits=LIMITS) as srv:
        yield srv


def post(path: str, size: int, *, expect: bool = False) -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {size}\r\nConnection: close\r\n"
    return (head + ("Expect: 100-continue\r\n" if expect else "") + "\r\n").encode()


def test_a_large_body_path_takes_a_body_past_max_body(server):
    reply = body_of(exchange(server, post("/in?q=1", 4000) + b"x" * 4000))
    assert reply["length"] == "4000" and len(reply["body"]) == 4000


def test_other_paths_keep_max_body(server):
    reply = body_of(exchange(server, post("/into", 4000) + b"x" * 4000))
    assert reply["length"] == "4000" and reply["body"] == ""  # unread: the app answers 413


def test_a_large_body_path_past_its_own_limit_is_unread(server):
    reply = body_of(exchange(server, post("/in", 6000) + b"x" * 6000))
    assert reply["body"] == ""


def test_only_so_many_connections_hold_a_large_body_at_once(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as first:
        first.sendall(post("/in", 4000, expect=True))
        assert first.recv(100).startswith(b"HTTP/1.1 100 Continue")  # its head is read: it holds the grant
        second = body_of(exchange(server, post("/in", 4000) + b"y" * 4000))
        first.sendall(b"x" * 4000)
        first.shutdown(socket.SHUT_WR)
        reply = b"".join(iter(lambda: first.recv(65536), b""))
    assert second["body"] == ""
    assert len(body_of(reply)["body"]) == 4000
    third = body_of(exchange(server, post("/in", 4000) + b"z" * 4000))
    assert len(third["body"]) == 4000  # the grant came back
