"""Hostile input closes only the offending channel, with one log line; the router keeps serving."""

from __future__ import annotations

import socket
import ssl
import struct
import threading
from urllib.parse import urlsplit

import pytest

from controller.app import router_link
from harness.client import pki as hp
from harness.dataplane import flows
from harness.dataplane.sync import DialError, echo
from router import EdgeRouter
from router.wire import MAGIC, PREFIX, Header, Message, u32
from router.wire import ContentType as CT
from tests.router.raw import RawChannel


def assert_echo_still_works(qs) -> None:
    with qs.dataplane(qs.binder) as host, qs.dataplane(qs.dialer) as guest:
        host.bind(qs.service, echo)
        with guest.dial(qs.service) as conn:
            conn.sendall(b"still here")
            assert conn.recv_exactly(10) == b"still here"


HOSTILE = {
    "bad magic": b"\x00\x01\x02\x03" + bytes(16),
    "oversized body": PREFIX.pack(MAGIC, CT.HELLO, 1, 0, 2**31),
    "header overruns": PREFIX.pack(MAGIC, CT.HELLO, 1, 8, 0) + struct.pack("<iI", 1002, 999),
    "not a hello first": Message(CT.DATA, b"x", {Header.CONN_ID: u32(1)}, seq=1).encode(),
}


@pytest.mark.parametrize("frame", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_malformed_first_frame_closes_that_channel_only(ziti_quickstart, router_log, frame):
    with RawChannel(ziti_quickstart.router_url, ziti_quickstart.dialer) as bystander:
        assert bystander.hello().bool_header(Header.RESULT_SUCCESS)
        with RawChannel(ziti_quickstart.router_url, ziti_quickstart.dialer) as hostile:
            hostile.send_bytes(frame)
            assert hostile.recv() is None
        probe = bystander.send(Message(CT.LATENCY))
        assert bystander.recv().reply_for == probe.seq
    assert len(router_log.wait()) == 1
    assert_echo_still_works(ziti_quickstart)


def test_an_unknown_content_type_after_hello_closes_the_channel(ziti_quickstart, router_log):
    with RawChannel(ziti_quickstart.router_url, ziti_quickstart.dialer) as hostile:
        hostile.hello()
        hostile.send(Message(4242, b"?"))
        assert hostile.recv() is None
    [line] = router_log.wait()
    assert "unknown content type 4242" in line
    assert_echo_still_works(ziti_quickstart)


def test_a_host_that_vanishes_mid_dial_fails_only_that_dial(ziti_quickstart, timeline):
    host = RawChannel(ziti_quickstart.router_url, ziti_quickstart.binder)
    host.hello()
    token = flows.dial(host.client, ziti_quickstart.service, "Bind")["token"].encode()
    host.send(
        Message(
            CT.BIND,
            token,
            {Header.CONN_ID: u32(1), Header.PUBLIC_KEY: bytes(32), Header.SUPPORTS_BIND_SUCCESS: b"\x01"},
        )
    )
    host.recv(), host.recv()  # StateConnected, BindSuccess
    outcome = {}

    def dial():
        with ziti_quickstart.dataplane(ziti_quickstart.dialer) as guest:
            try:
                guest.dial(ziti_quickstart.service)
            except DialError as ex:
                outcome["error"] = str(ex)

    dialer = threading.Thread(target=dial)
    dialer.start()
    assert host.recv().content_type == CT.DIAL
    host.close()  # gone without answering
    dialer.join(30)
    assert outcome["error"].startswith("dial failed")
    timeline.wait("terminator", "deleted")
    assert_echo_still_works(ziti_quickstart)


def test_a_silent_peer_is_closed_after_the_hello_timeout(ziti_quickstart, ziti_quickstart_controller, router_log):
    link = router_link(ziti_quickstart_controller.controller, name="silent-peer-router")
    # no link listener: a link to another test's router (stopping meanwhile) would log its own warnings here
    with EdgeRouter(link, "127.0.0.1", 0, hello_timeout=0.2, link_port=None) as router:
        with RawChannel(router.url, ziti_quickstart.dialer) as silent:
            assert silent.recv() is None  # the router gave up; this side never sent a byte
    ziti_quickstart.admin.management.call("deleteEdgeRouter", link.router_id)
    [line] = router_log.wait()
    assert "sent no hello" in line
    assert_echo_still_works(ziti_quickstart)


@pytest.mark.parametrize("certificate", ["untrusted", "none"])
def test_a_client_without_a_trusted_certificate_is_refused_in_the_handshake(
    ziti_quickstart, router_log, certificate, tmp_path
):
    parts = urlsplit(ziti_quickstart.router_url)
    context = ssl.create_default_context(cafile=str(ziti_quickstart.ca))
    if certificate == "untrusted":
        context.load_cert_chain(*hp.make_leaf(hp.make_root_ca("not the controller"), "intruder").write(tmp_path))
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        with context.wrap_socket(sock, server_hostname=parts.hostname) as tls:
            try:
                assert tls.recv(20) == b""  # TLS 1.3: the router refuses after the client's handshake
            except (ssl.SSLError, ConnectionError):
                pass
    [line] = router_log.wait()
    assert "TLS handshake" in line and ("CERTIFICATE_VERIFY_FAILED" in line or "CERTIFICATE" in line)
    assert_echo_still_works(ziti_quickstart)
