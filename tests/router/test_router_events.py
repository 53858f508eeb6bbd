"""Dials, binds, closes and bytes moved on the controller's timeline; hosting per service."""

from __future__ import annotations

import select

from controller.app import router_link
from harness.dataplane import flows
from harness.dataplane.hosting import hosting
from harness.dataplane.sync import echo
from router import EdgeRouter
from router.wire import ContentType as CT
from router.wire import Header, Message, i32, u32
from tests.router.raw import RawChannel

#: what e2ee adds on the wire: a 24-byte stream header, then 17 bytes per message
HEADER, OVERHEAD = 24, 17


def test_an_echo_leaves_terminator_and_circuit_events_with_bytes_moved(ziti_quickstart, timeline):
    with (
        ziti_quickstart.dataplane(ziti_quickstart.binder) as host,
        ziti_quickstart.dataplane(ziti_quickstart.dialer) as guest,
    ):
        host.bind(ziti_quickstart.service, echo)
        created = timeline.wait("terminator", "created")[-1]
        with guest.dial(ziti_quickstart.service) as conn:
            conn.sendall(b"hello")
            assert conn.recv_exactly(5) == b"hello"
        circuit = timeline.wait("circuit", "created")[-1]
        deleted = timeline.wait("circuit", "deleted", circuit_id=circuit["circuit_id"])[0]
    timeline.wait("terminator", "deleted", terminator_id=created["terminator_id"])
    assert circuit["service_id"] == created["service_id"] == deleted["service_id"]
    assert (circuit["terminator_id"], circuit["host_id"]) == (created["terminator_id"], created["identity_id"])
    assert deleted["bytes_from_dialer"] == deleted["bytes_from_host"] == HEADER + 5 + OVERHEAD


def test_a_refused_dial_is_a_failed_circuit_event(ziti_quickstart, timeline):
    with ziti_quickstart.dataplane(ziti_quickstart.dialer) as guest:
        try:
            guest.dial(ziti_quickstart.service)
        except ConnectionError:
            pass
    [failed] = timeline.wait("circuit", "failed")
    assert failed["reason"].endswith("has no terminators")


def test_hosting_says_which_services_have_terminators_right_now(ziti_quickstart):
    def row():
        return next(r for r in hosting(ziti_quickstart.admin) if r["service"] == ziti_quickstart.service)

    assert row()["terminators"] == 0
    with ziti_quickstart.dataplane(ziti_quickstart.binder) as host:
        host.bind(ziti_quickstart.service, echo)
        assert row() | {"serviceId": None} == {
            "service": ziti_quickstart.service,
            "serviceId": None,
            "terminators": 1,
            "routers": ["quickstart-router"],
            "hosts": [f"{ziti_quickstart.service}-binder"],
        }


def test_the_controller_hears_of_a_circuit_before_its_dialer_is_told_it_is_connected(
    ziti_quickstart, ziti_quickstart_controller, timeline
):
    """A dialer may send data the moment StateConnected arrives, so the circuit is on record before then: when
    the router reports it, not a byte of StateConnected has reached the dialer's socket yet."""
    link = router_link(ziti_quickstart_controller.controller, name="circuit-order-router")
    dialer_had_bytes: list[bool] = []

    class Watching:
        def __getattr__(self, name):
            return getattr(link, name)

        def dial(self, *args):
            return self.answered(link.dial(*args))  # the circuit is recorded by the time the controller answers

        def dial_now(self, *args):
            return self.answered(link.dial_now(*args))  # the same, answered in the router's loop

        def answered(self, answer):
            if answer is not None:
                readable, _, _ = select.select([guest.sock], [], [], 0)
                dialer_had_bytes.append(bool(readable) or guest.sock.pending() > 0)
            return answer

    qs = ziti_quickstart
    with EdgeRouter(Watching(), "127.0.0.1", 0) as router:
        with RawChannel(router.url, qs.binder) as host, RawChannel(router.url, qs.dialer) as guest:
            host.hello(), guest.hello()
            token = flows.dial(host.client, qs.service, "Bind")["token"].encode()
            bind = {Header.CONN_ID: u32(1), Header.PUBLIC_KEY: bytes(32), Header.SUPPORTS_BIND_SUCCESS: b"\x01"}
            host.send(Message(CT.BIND, token, bind))
            host.recv(), host.recv()  # StateConnected, BindSuccess
            token = flows.dial(guest.client, qs.service, "Dial")["token"].encode()
            guest.send(Message(CT.CONNECT, token, {Header.CONN_ID: u32(1), Header.PUBLIC_KEY: bytes(32)}))
            dial = host.recv()
            accepted = {Header.CONN_ID: u32(1), Header.REPLY_FOR: i32(dial.seq)}
            host.send(Message(CT.DIAL_SUCCESS, u32(dial.int_header(Header.ROUTER_PROVIDED_CONN_ID)), accepted))
            assert guest.recv().content_type == CT.STATE_CONNECTED
            assert dialer_had_bytes == [False]
    qs.admin.management.call("deleteEdgeRouter", link.router_id)
