"""The plain-HTTP listener speaks HTTP/1.1 as clients expect: framing, keep-alive, limits.

Raw sockets send exactly the bytes under test; the app echoes what it saw.
"""

from __future__ import annotations

import http.client
import itertools
import json
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.server.serve import Limits, ThreadedServer

BIG = b"x" * 65536


def echo_app(environ, start_response):
    if environ["PATH_INFO"] == "/big":
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(BIG)))])
        return [BIG]
    if environ["PATH_INFO"] == "/stream":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return iter([b"one,", b"", b"two"])
    body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    reply = json.dumps(
        {
            "method": environ["REQUEST_METHOD"],
            "path": environ["PATH_INFO"],
            "query": environ["QUERY_STRING"],
            "length": environ["CONTENT_LENGTH"],
            "body": body.decode("latin-1"),
            "session": environ.get("HTTP_ZT_SESSION"),
        }
    ).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(reply)))])
    return [reply]


@pytest.fixture(scope="module")
def server():
    with ThreadedServer(echo_app, "127.0.0.1", 0, threads=2, limits=Limits(max_body=1000, max_head=4096)) as srv:
        yield srv


def exchange(server, raw: bytes) -> bytes:
    """Send ``raw``, then read until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(raw)
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def body_of(reply: bytes) -> dict:
    return json.loads(reply.split(b"\r\n\r\n", 1)[1])


def test_chunked_request_body_reaches_the_app_whole(server):
    reply = exchange(
        server,
        b"POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
    )
    assert body_of(reply)["body"] == "hello world" and body_of(reply)["length"] == "11"


def test_pipelined_requests_are_answered_in_order(server):
    reply = exchange(
        server, b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b?q=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    parts = reply.split(b"HTTP/1.1 200 OK")
    assert len(parts) == 3 and b'"/a"' in parts[1] and b'"q=1"' in parts[2]


def test_percent_encoded_path_is_decoded_and_query_kept(server):
    reply = exchange(server, b"GET /edge%20x/y?filter=name%3D%22a%22 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert body_of(reply)["path"] == "/edge x/y" and body_of(reply)["query"] == "filter=name%3D%22a%22"


def test_streamed_body_is_chunked(server):
    reply = exchange(server, b"GET /stream HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    head, body = reply.split(b"\r\n\r\n", 1)
    assert b"Transfer-Encoding: chunked" in head and body == b"4\r\none,\r\n3\r\ntwo\r\n0\r\n\r\n"


def test_http10_stream_ends_with_the_connection(server):
    reply = exchange(server, b"GET /stream HTTP/1.0\r\n\r\n")
    head, body = reply.split(b"\r\n\r\n", 1)
    assert b"chunked" not in head and b"Connection: close" in head and body == b"one,two"


def test_head_has_headers_and_no_body(server):
    reply = exchange(server, b"HEAD /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    head, body = reply.split(b"\r\n\r\n", 1)
    assert b"Content-Length:" in head and body == b""


def test_expect_continue_gets_100_then_the_answer(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.putrequest("POST", "/x")
        conn.putheader("Content-Length", "3")
        conn.putheader("Expect", "100-continue")
        conn.endheaders()
        assert conn.sock.recv(100).startswith(b"HTTP/1.1 100 Continue")
        conn.send(b"abc")
        assert json.loads(conn.getresponse().read())["body"] == "abc"
    finally:
        conn.close()


def test_too_large_body_reaches_the_app_as_its_declared_length_unread(server):
    reply = exchange(server, b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" + b"x" * 5000)
    assert body_of(reply)["length"] == "5000" and body_of(reply)["body"] == ""


def test_too_large_chunked_body_is_cut_just_past_the_limit(server):
    chunk = b"%x\r\n%s\r\n" % (600, b"y" * 600)
    reply = exchange(
        server, b"POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk * 3 + b"0\r\n\r\n"
    )
    assert body_of(reply)["length"] == "1001"


def test_malformed_request_is_400_in_the_error_envelope(server):
    reply = exchange(server, b"GET / HTTP/1.1\r\nHost x\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400")
    assert body_of(reply)["error"]["code"] == "INVALID_REQUEST"


def test_oversized_head_is_431(server):
    reply = exchange(server, b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 8000 + b"\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 431")


def test_header_with_underscore_cannot_alias_a_dashed_one(server):
    reply = exchange(server, b"GET / HTTP/1.1\r\nHost: x\r\nzt_session: forged\r\nConnection: close\r\n\r\n")
    assert body_of(reply)["session"] is None
    reply = exchange(server, b"GET / HTTP/1.1\r\nHost: x\r\nzt-session: real\r\nConnection: close\r\n\r\n")
    assert body_of(reply)["session"] == "real"


def test_a_client_that_does_not_read_is_paused_then_gets_every_answer(server):
    count = 300  # ~20 MB of answers: far more than the socket buffers hold
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as reader:
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        reader.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n" * count)
        probe = exchange(server, b"GET /probe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert body_of(probe)["path"] == "/probe"
        received, answers = bytearray(), 0
        while answers < count:
            chunk = reader.recv(1 << 20)
            assert chunk, "the server closed before answering every request"
            received += chunk
            answers = received.count(b"HTTP/1.1 200 OK")
    assert answers == count


PIPELINE = (
    b"POST /one HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    b"GET /two?x=1 HTTP/1.1\r\nHost: x\r\n\r\n"
    b"POST /three HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nConnection: close\r\n\r\nwxyz"
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(min_value=1, max_value=len(PIPELINE) - 1), max_size=12, unique=True))
def test_requests_split_anywhere_are_parsed_the_same(server, cuts):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        bounds = [0, *sorted(cuts), len(PIPELINE)]
        for start, end in itertools.pairwise(bounds):
            sock.sendall(PIPELINE[start:end])
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    bodies = [json.loads(part.split(b"\r\n\r\n", 1)[1]) for part in reply.split(b"HTTP/1.1 200 OK")[1:]]
    assert [(b["path"], b["query"], b["body"]) for b in bodies] == [
        ("/one", "", "abcde"),
        ("/two", "x=1", ""),
        ("/three", "", "wxyz"),
    ]
