"""A reader that stops on one circuit never stalls the other circuits of the same channel or link."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from harness.dataplane import flows
from harness.dataplane.sync import SyncDataPlane, echo
from router.wire import ContentType as CT
from router.wire import Header, Message, u32
from tests.router.raw import RawChannel

CHUNK = 64 * 1024
FLOOD = 16 * 2**20


def stopped_reader(router_url: str, identity, service: str) -> tuple[RawChannel, threading.Thread]:
    """A dialer that connects, then sends FLOOD bytes to an echo host and never reads a byte."""
    channel = RawChannel(router_url, identity)
    channel.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    channel.hello()
    token = flows.dial(channel.client, service, "Dial")["token"].encode()
    connect = channel.send(Message(CT.CONNECT, token, {Header.CONN_ID: u32(1)}))
    reply = channel.recv()
    assert (reply.content_type, reply.reply_for) == (CT.STATE_CONNECTED, connect.seq), reply.body

    def flood():
        try:
            for _ in range(FLOOD // CHUNK):
                channel.send(Message(CT.DATA, bytes(CHUNK), {Header.CONN_ID: u32(1)}))
        except OSError:
            pass  # the router gave up on this circuit and this test closes the socket

    sender = threading.Thread(target=flood, daemon=True)
    sender.start()
    return channel, sender


@pytest.mark.parametrize("where", ["one router", "across a link"])
def test_a_stopped_reader_does_not_stall_another_circuit_of_its_host(net, router_log, where):
    options = {"circuit_buffer": 256 * 1024, "stall_timeout": 0.5}
    net.start("a", **options)
    net.start("b", **options)
    net.wait_links(1)
    service = net.service("slow", encrypted=False)
    dialers = ["a"] if where == "one router" else ["b"]
    binder = net.identity("binder", service, "Bind", ["a"])
    dialer = net.identity("dialer", service, "Dial", dialers)
    stopper = net.identity("stopper", service, "Dial", dialers)
    url = net.routers[dialers[0]].url
    with SyncDataPlane.from_identity_file(binder) as host, SyncDataPlane.from_identity_file(dialer) as guest:
        host.bind(service, echo)
        with guest.dial(service) as conn:
            conn.sendall(b"before")
            assert conn.recv_exactly(6) == b"before"
            channel, sender = stopped_reader(url, stopper, service)
            try:
                stalled = net.timeline.wait("circuit", "deleted", reason="circuit stalled: the reader stopped reading")
                started = time.monotonic()
                for _ in range(20):
                    conn.sendall(b"still echoing")
                    assert conn.recv_exactly(13) == b"still echoing"
                assert time.monotonic() - started < 10  # a bound, not a speed: without the fix it never ends
            finally:
                channel.close()
                sender.join(10)
    assert len(stalled) == 1
    assert [line for line in router_log.lines if "stalled" in line] == [router_log.lines[0]]
