"""Hostile input on the link listener closes that one connection with one log line; links keep working."""

from __future__ import annotations

import re
import socket
import ssl
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from harness.client import pki as hp
from harness.dataplane.sync import SyncDataPlane, echo, load_identity_file
from router.controller_link import Credentials
from router.server import link_contexts
from router.wire import MAGIC, PREFIX, Header, Message, decode
from router.wire import ContentType as CT
from tests.router.raw import RawChannel
from tests.support import recv_exactly


def tls_to(url: str, context: ssl.SSLContext) -> ssl.SSLSocket:
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
    return context.wrap_socket(sock, server_hostname=parts.hostname)


def closed_by_peer(sock: ssl.SSLSocket) -> bool:
    try:
        while sock.recv(4096):
            pass
    except (ssl.SSLError, ConnectionError):
        pass
    return True


def identity_context(net, folder: Path) -> ssl.SSLContext:
    """A client certificate the controller CA signed, but for an SDK identity, not a router."""
    service = net.service("hostile")
    _, identity = load_identity_file(net.identity("intruder", service, "Dial", ["a"]))
    context = ssl.create_default_context(cadata=identity.ca_pem)
    context.load_cert_chain(*identity.cert_key().write(folder, "intruder"))
    return context


def assert_link_still_carries(net) -> None:
    service = net.service("after")
    binder = net.identity("after-binder", service, "Bind", ["a"])
    dialer = net.identity("after-dialer", service, "Dial", ["b"])
    with SyncDataPlane.from_identity_file(binder) as host, SyncDataPlane.from_identity_file(dialer) as guest:
        host.bind(service, echo)
        with guest.dial(service) as conn:
            conn.sendall(b"still linked")
            assert conn.recv_exactly(12) == b"still linked"


HOSTILE = {
    "bad magic": b"\x00\x01\x02\x03" + bytes(16),
    "oversized": PREFIX.pack(MAGIC, CT.HELLO, 1, 0, 2**31),
    "not a hello": Message(CT.LINK_PAYLOAD, b"x", {Header.CIRCUIT_ID: b"c"}, seq=1).encode(),
    "a router id that is not this certificate's": None,
}


@pytest.mark.parametrize("frame", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_client_certificate_of_an_sdk_identity_cannot_make_a_link(net, router_log, tmp_path, frame):
    a, b = net.start("a"), net.start("b")
    net.wait_links(1)
    context = identity_context(net, tmp_path)
    with tls_to(a.link_url, context) as sock:
        if frame is None:  # well formed, but claims to be router b
            sock.sendall(
                Message(CT.HELLO, b"", {Header.ROUTER_ID: b.router_id.encode(), Header.LINK_ID: b"x"}).encode()
            )
        else:
            sock.sendall(frame)
        assert closed_by_peer(sock)
    [line] = router_log.wait()
    assert "link" in line or "closing" in line
    assert_link_still_carries(net)


def test_a_certificate_from_a_foreign_ca_is_refused_in_the_handshake(net, router_log, tmp_path):
    a = net.start("a")
    net.start("b")
    net.wait_links(1)
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    context.load_cert_chain(*hp.make_leaf(hp.make_root_ca("not the controller"), "intruder").write(tmp_path))
    try:
        with tls_to(a.link_url, context) as sock:
            assert closed_by_peer(sock)
    except (ssl.SSLError, ConnectionError):
        pass
    [line] = router_log.wait()
    assert "link TLS handshake" in line
    assert_link_still_carries(net)


def test_a_sdk_channel_certificate_check_does_not_accept_a_router_on_the_link_port(net, router_log):
    """The link listener trusts only the controller CA: an SDK hello on it is not a link hello."""
    a = net.start("a")
    net.start("b")
    net.wait_links(1)
    service = net.service("wrong-port")
    dialer = net.identity("wrong-port", service, "Dial", ["a"])
    with RawChannel(a.link_url, dialer) as channel:
        reply = channel.hello()
        assert reply is None or not reply.bool_header(Header.RESULT_SUCCESS)
        assert channel.recv() is None
    [line] = router_log.wait()
    assert "refused" in line


def test_a_peer_that_stops_answering_loses_its_link(net, router_log):
    net.start("a")
    net.start("b", probe_interval=0.1, probe_timeout=0.5)
    net.wait_links(1)
    link = net.link_between("a", "b")
    frozen, release = threading.Event(), threading.Event()
    # a hangs (as if stopped) until b has given up on it
    net.routers["a"].loop.call_soon_threadsafe(lambda: (frozen.set(), release.wait(30)))
    assert frozen.wait(10)
    try:
        net.timeline.wait("link", "disconnected", link_id=link.id)
    finally:
        release.set()
    lines = router_log.wait()
    assert [line for line in lines if "stopped answering" in line] == [lines[0]]
    net.wait_links(1)  # b dials again once a answers: a new link
    assert net.link_between("a", "b").id != link.id


def link_hello(url: str, context: ssl.SSLContext, router_id: str, link_id: str) -> Message:
    """A link hello as ``router_id`` (its own certificate) on a new connection; the listener's answer."""
    with tls_to(url, context) as sock:
        sock.sendall(
            Message(CT.HELLO, b"", {Header.ROUTER_ID: router_id.encode(), Header.LINK_ID: link_id.encode()}).encode()
        )
        head = recv_exactly(sock, PREFIX.size)
        _, _, _, header_len, body_len = PREFIX.unpack(head)
        return decode(head + recv_exactly(sock, header_len + body_len))


def test_a_duplicate_link_with_a_greater_id_is_refused_until_the_kept_one_gave_way_five_times(net):
    """Router b's certificate dials a again while their link is up: a refuses greater link ids (the smaller stays,
    as on both sides when two routers dial each other at once), but a link kept over five duplicates gives way to
    the next one (its peer keeps dialing, so its end is gone)."""
    a, b = net.start("a"), net.start("b")
    net.wait_links(1)
    context = link_contexts(Credentials(**net.links["b"].credentials()))[1]
    context.check_hostname = False  # the test checks nothing of a's certificate but its chain
    replies = [link_hello(a.link_url, context, b.router_id, "f" * 31 + str(n)) for n in range(6)]
    assert [r.bool_header(Header.RESULT_SUCCESS) for r in replies] == [False] * 5 + [True]
    # the link kept (the smaller id, when both routers dialed each other at start) is named by every refusal
    refusal = re.fullmatch(
        rf"duplicate link: link (\w+) to router {re.escape(a.router_id)} is up", replies[0].body.decode()
    )
    assert refusal, replies[0].body
    assert {r.body.decode() for r in replies[:5]} == {refusal[0]}
    kept = refusal[1]
    assert net.timeline.matching("link", "connected", link_id=kept)  # a link the routers made, not an invented id
    net.timeline.wait("link", "disconnected", link_id=kept)
