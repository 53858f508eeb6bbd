"""The router benchmark's real-SDK figures run end to end (two libziti processes through the router and the
plain-TLS anchor); the figures themselves are printed by ``python -m benchmarks``, never asserted here."""

from __future__ import annotations

import socket
import ssl
import threading

import pytest

from benchmarks.router import real_sdk_figures
from harness.client import ZitiClient
from harness.client import pki as hp

pytest.importorskip("openziti")


@pytest.fixture
def tls_echo_port(tmp_path):
    root = hp.make_root_ca("echo root")
    files = hp.make_leaf(root, "127.0.0.1", ips=["127.0.0.1"], eku=("serverAuth",)).write(tmp_path, "echo")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*files)
    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        with listener:
            accepted, _ = listener.accept()
            with context.wrap_socket(accepted, server_side=True) as conn:
                while data := conn.recv(65536):
                    conn.sendall(data)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    thread.join(10)


def test_real_sdk_round_trips_through_the_router_and_the_plain_tls_anchor(
    ziti_quickstart, ziti_quickstart_controller, tls_echo_port
):
    with ZitiClient.connect(ziti_quickstart_controller.url) as admin:
        admin.login("admin", "admin")
        figures = real_sdk_figures(admin, ziti_quickstart, tls_echo_port, {"round_trips": 5})
    routed, direct = (
        figures["real SDK echo p50 via router (ms)"],
        figures["same client, plain TLS to the echo process, p50 (ms)"],
    )
    assert routed > 0 and direct > 0
    assert figures["real SDK echo p50 ratio router / direct"] == pytest.approx(routed / direct)
