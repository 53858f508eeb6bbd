"""The control port is bounded like every other listener: a cap per address (more connections are closed as they
are accepted), and the same TLS policy (no CBC suites in TLS 1.2)."""

from __future__ import annotations

import socket
import ssl

import pytest

from harness.processes.routers import RouterProcess
from router.control import parse_address
from tests.ctrl.support import wait_until

CBC_TLS12 = "ECDHE-RSA-AES128-SHA256:ECDHE-ECDSA-AES128-SHA256:ECDHE-RSA-AES128-SHA:ECDHE-ECDSA-AES128-SHA"


def router_context(router: RouterProcess, ciphers: str | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cadata=(router.data_dir / "ca.pem").read_text())
    context.load_cert_chain(router.data_dir / "cert.pem", router.data_dir / "key.pem")
    if ciphers is not None:
        context.maximum_version = ssl.TLSVersion.TLSv1_2
        context.set_ciphers(ciphers)
    return context


def tls_handshake(address: str, context: ssl.SSLContext) -> str:
    host, port = parse_address(address)
    with socket.create_connection((host, port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname=host) as conn:
            return conn.cipher()[0]


def test_the_control_port_refuses_cbc_suites_and_serves_aead_ones(network, make_router):
    router = make_router(start=False)
    with pytest.raises(ssl.SSLError):
        tls_handshake(network.listener.address, router_context(router, CBC_TLS12))
    assert "GCM" in tls_handshake(network.listener.address, router_context(router, "ECDHE+AESGCM"))


def test_connections_beyond_the_cap_per_address_are_closed_at_once_and_slots_come_back(network, make_router):
    listener = network.listener
    router = make_router()  # one connection of 127.0.0.1 already: the running router's
    host, port = parse_address(listener.address)
    held = listener.per_address.get(host, 0)
    cap, listener.max_per_address = listener.max_per_address, held + 2
    idle = [socket.create_connection((host, port), timeout=10) for _ in range(2)]
    try:
        wait_until(lambda: listener.per_address.get(host, 0) == held + 2, what="the idle connections accepted")
        with socket.create_connection((host, port), timeout=10) as extra:
            assert extra.recv(1) == b""  # closed as it was accepted, never a TLS handshake
        assert router.online()
    finally:
        for sock in idle:
            sock.close()
        wait_until(lambda: listener.per_address.get(host, 0) == held, what="the slots freed")
        listener.max_per_address = cap
    router.restart()  # a router gets its connection again
    assert router.online()


@pytest.mark.parametrize("which", ["edge", "link"])
def test_the_routers_listeners_cap_connections_per_address(network, which):
    router = network.local.router  # the embedded router, in this process
    listener = router._server if which == "edge" else router._link_server
    port = router.port if which == "edge" else router.link_port
    held = listener.per_address.get("127.0.0.1", 0)
    cap, listener.max_per_address = listener.max_per_address, held + 1
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as idle:
            wait_until(lambda: listener.per_address.get("127.0.0.1", 0) == held + 1, what="the idle connection")
            with socket.create_connection(("127.0.0.1", port), timeout=10) as extra:
                assert extra.recv(1) == b""
            assert idle.fileno() >= 0
        wait_until(lambda: listener.per_address.get("127.0.0.1", 0) == held, what="the slot freed")
    finally:
        listener.max_per_address = cap


def test_the_controller_end_of_a_control_connection_sends_without_nagle(network, make_router):
    """Each reply leaves at once: with Nagle a reply sent while the one before is unacknowledged waited for the
    router's delayed ACK (40 ms), which made every dial through a process router take 40 ms (22 dials/s)."""
    router = make_router()
    session = network.listener.sessions[router.id]
    sock = session.writer.get_extra_info("socket")
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
