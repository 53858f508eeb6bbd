"""Echo through the edge router with the harness's own SDK client (sync and async)."""

from __future__ import annotations

import asyncio

from harness.dataplane import DataPlane
from harness.dataplane.sync import SyncDataPlane, echo, load_identity_file
from tests.router.raw import upper_after_eof


def test_bind_echo_dial_send_hello_read_hello(ziti_quickstart):
    with (
        ziti_quickstart.dataplane(ziti_quickstart.binder) as host,
        ziti_quickstart.dataplane(ziti_quickstart.dialer) as guest,
    ):
        host.bind(ziti_quickstart.service, echo)
        with guest.dial(ziti_quickstart.service) as conn:
            conn.sendall(b"hello")
            assert conn.recv_exactly(5) == b"hello"


def test_half_close_lets_the_host_answer_after_end_of_stream(ziti_quickstart):
    with (
        ziti_quickstart.dataplane(ziti_quickstart.binder) as host,
        ziti_quickstart.dataplane(ziti_quickstart.dialer) as guest,
    ):
        host.bind(ziti_quickstart.service, upper_after_eof)
        with guest.dial(ziti_quickstart.service) as conn:
            conn.sendall(b"abc")
            conn.sendall(b"def")
            conn.shutdown_write()
            assert conn.recv_exactly(6) == b"ABCDEF"
            assert conn.recv() == b""


def test_async_clients_echo_large_and_many_messages(ziti_quickstart):
    async def scenario():
        async def handler(conn):
            while data := await conn.recv():
                await conn.send(data)

        host = DataPlane(*load_identity_file(ziti_quickstart.binder))
        guest = DataPlane(*load_identity_file(ziti_quickstart.dialer))
        async with host, guest:
            await host.bind(ziti_quickstart.service, handler)
            conns = [await guest.dial(ziti_quickstart.service) for _ in range(3)]
            payload = bytes(range(256)) * 1024
            for conn in conns:
                await conn.send(payload)
            return [await conn.recv_exactly(len(payload)) == payload for conn in conns]

    assert asyncio.run(scenario()) == [True, True, True]


def test_an_http_request_over_the_overlay(ziti_quickstart):
    def http_app(conn):
        request = b""
        while b"\r\n\r\n" not in request:
            request += conn.recv()
        _, path, _ = request.split(b"\r\n", 1)[0].split(b" ")
        body = b"you asked for " + path
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))

    with (
        ziti_quickstart.dataplane(ziti_quickstart.binder) as host,
        ziti_quickstart.dataplane(ziti_quickstart.dialer) as guest,
    ):
        host.bind(ziti_quickstart.service, http_app)
        with guest.dial(ziti_quickstart.service) as conn:
            conn.sendall(b"GET /hello HTTP/1.1\r\nHost: " + ziti_quickstart.service.encode() + b"\r\n\r\n")
            response = b""
            while chunk := conn.recv():
                response += chunk
    head, body = response.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200 OK") and body == b"you asked for /hello"


def test_a_dialer_logged_in_by_oidc_echoes_through_the_router(ziti_quickstart):
    """The router's hello takes an OIDC access token, bound to the certificate that logged in."""
    client, identity = load_identity_file(ziti_quickstart.dialer)
    client.logout()
    client.login_cert(oidc="c")
    assert client.token is None and client.session_token.count(".") == 2  # a JWT, not a zt-session
    with ziti_quickstart.dataplane(ziti_quickstart.binder) as host, SyncDataPlane(client, identity) as guest:
        host.bind(ziti_quickstart.service, echo)
        with guest.dial(ziti_quickstart.service) as conn:
            conn.sendall(b"hello over oidc")
            assert conn.recv_exactly(15) == b"hello over oidc"
