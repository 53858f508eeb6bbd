"""Routers linked to each other: multi-hop circuits, terminator strategies across routers, failover."""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
import time

import pytest

from harness.analysis.timeline import event_rows
from harness.dataplane import DataPlane, DialError
from harness.dataplane.sync import SyncDataPlane, echo, load_identity_file
from router.wire import Header
from tests.router.raw import RawChannel


def named_echo(name: bytes):
    def handler(conn):
        while data := conn.recv():
            conn.sendall(name + b":" + data)

    return handler


def ask(plane: SyncDataPlane, service: str, data: bytes = b"hello") -> bytes:
    with plane.dial(service) as conn:
        conn.sendall(data)
        out = b""
        while not out.endswith(data):
            chunk = conn.recv()
            assert chunk, f"closed after {out!r}"
            out += chunk
        return out


def test_a_dialer_on_one_router_reaches_a_binder_on_another_across_the_link(net):
    net.start("a"), net.start("b")
    net.wait_links(1)
    service = net.service("echo")
    binder = net.identity("binder", service, "Bind", ["a"])
    dialer = net.identity("dialer", service, "Dial", ["b"])
    with SyncDataPlane.from_identity_file(binder) as host, SyncDataPlane.from_identity_file(dialer) as guest:
        host.bind(service, echo)
        with guest.dial(service) as conn:
            payload = bytes(range(256)) * 512
            conn.sendall(payload)
            assert conn.recv_exactly(len(payload)) == payload
            [circuit] = [
                c for c in net.fabric.circuits() if c.service_id == net.ctl.access.services.find_by_name(service)["id"]
            ]
            link = net.link_between("a", "b")
            assert circuit.path_routers == (net.id("b"), net.id("a")) and circuit.path_links == (link.id,)
        created = net.timeline.wait("circuit", "created", circuit_id=circuit.id)[0]
        deleted = net.timeline.wait("circuit", "deleted", circuit_id=circuit.id)[0]
    assert created["path"] == {"nodes": [net.id("b"), net.id("a")], "links": [link.id]}
    names = {net.id(short): net.name(short) for short in "ab"}
    assert event_rows([created], names)[0]["path"] == f"{net.name('b')} > {net.name('a')}"  # the events timeline
    assert created["router_id"] == net.id("b")
    assert min(deleted["bytes_from_dialer"], deleted["bytes_from_host"]) > len(payload)  # plus e2ee overhead
    assert net.fabric.circuit(circuit.id) is None


def test_two_hops_when_the_direct_link_costs_more_and_the_async_plane_echoes_many(net):
    for short in "abc":
        net.start(short)
    net.wait_links(3)
    net.fabric.update_link(net.link_between("b", "c").id, static_cost=1000)
    service = net.service("far")
    binder = net.identity("binder", service, "Bind", ["c"])
    dialer = net.identity("dialer", service, "Dial", ["b"])

    async def scenario():
        async def handler(conn):
            while data := await conn.recv():
                await conn.send(data)

        async with DataPlane(*load_identity_file(binder)) as host, DataPlane(*load_identity_file(dialer)) as guest:
            await host.bind(service, handler)
            conns = [await guest.dial(service) for _ in range(3)]
            for index, conn in enumerate(conns):
                await conn.send(b"%d" % index * 1000)
            return [await conn.recv_exactly(1000) for conn in conns]

    assert asyncio.run(scenario()) == [b"0" * 1000, b"1" * 1000, b"2" * 1000]
    paths = [e["path"]["nodes"] for e in net.timeline.matching("circuit", "created")]
    assert paths == [[net.id("b"), net.id("a"), net.id("c")]] * 3


@pytest.mark.parametrize(
    ("on_a", "on_c", "answers"),
    [
        ({"cost": 500}, {}, b"c"),  # smartrouting: the lower cost across routers
        ({}, {"cost": 500}, b"a"),
        ({"cost": 500, "precedence": "required"}, {}, b"a"),  # required beats any cost
        ({"precedence": "failed"}, {"cost": 900}, b"c"),  # failed only when nothing else is there
    ],
)
def test_terminator_cost_and_precedence_decide_across_routers(net, on_a, on_c, answers):
    net.start("a"), net.start("b"), net.start("c")
    net.wait_links(3)
    service = net.service("pick")
    dialer = net.identity("dialer", service, "Dial", ["b"])
    binder_a = net.identity("on-a", service, "Bind", ["a"])
    binder_c = net.identity("on-c", service, "Bind", ["c"])
    with (
        SyncDataPlane.from_identity_file(binder_a) as host_a,
        SyncDataPlane.from_identity_file(binder_c) as host_c,
        SyncDataPlane.from_identity_file(dialer) as guest,
    ):
        host_a.bind(service, named_echo(b"a"), **on_a)
        host_c.bind(service, named_echo(b"c"), **on_c)
        assert {ask(guest, service) for _ in range(4)} == {answers + b":hello"}


@pytest.mark.parametrize("strategy", ["random", "weighted"])
def test_random_and_weighted_strategies_use_every_terminator(net, strategy):
    net.start("a"), net.start("b"), net.start("c")
    net.wait_links(3)
    service = net.service("spread", strategy=strategy)
    dialer = net.identity("dialer", service, "Dial", ["b"])
    on_a = net.identity("on-a", service, "Bind", ["a"])
    on_c = net.identity("on-c", service, "Bind", ["c"])
    net.links["b"].random.seed(7)
    with (
        SyncDataPlane.from_identity_file(on_a) as host_a,
        SyncDataPlane.from_identity_file(on_c) as host_c,
        SyncDataPlane.from_identity_file(dialer) as guest,
    ):
        host_a.bind(service, named_echo(b"a"))
        host_c.bind(service, named_echo(b"c"))
        seen = collections.Counter(ask(guest, service) for _ in range(16))
    assert set(seen) == {b"a:hello", b"c:hello"}


def test_a_router_that_goes_ends_its_circuits_and_the_next_dial_goes_through_another(net):
    net.start("a"), net.start("b"), net.start("c")
    net.wait_links(3)
    service = net.service("failover")
    dialer = net.identity("dialer", service, "Dial", ["b"])
    binder = net.identity("binder", service, "Bind", ["a"])
    on_c = net.identity("on-c", service, "Bind", ["c"])
    gone = net.id("a")
    with (
        SyncDataPlane.from_identity_file(binder) as host_a,
        SyncDataPlane.from_identity_file(on_c) as host_c,
        SyncDataPlane.from_identity_file(dialer) as guest,
    ):
        host_a.bind(service, named_echo(b"a"))
        host_c.bind(service, named_echo(b"c"), cost=100)
        with guest.dial(service) as conn:
            conn.sendall(b"one")
            assert conn.recv_exactly(5) == b"a:one"
            net.stop("a")
            assert conn.recv() == b""  # the circuit through a ended: the dialer reads end of stream
        assert [link for link in net.fabric.links() if link.touches(gone)] == []
        assert [c for c in net.fabric.circuits() if gone in c.path_routers] == []
        assert ask(guest, service) == b"c:hello"
        net.start("a")  # a restarted router links again
        net.wait_links(3)
        assert any(link.touches(gone) for link in net.fabric.links())


def test_when_the_controller_says_a_router_went_its_peers_drop_their_links_and_circuits_at_once(net):
    net.start("a"), net.start("b")
    net.wait_links(1)
    service = net.service("said")
    binder = net.identity("binder", service, "Bind", ["a"])
    dialer = net.identity("dialer", service, "Dial", ["b"])
    with SyncDataPlane.from_identity_file(binder) as host, SyncDataPlane.from_identity_file(dialer) as guest:
        host.bind(service, echo)
        with guest.dial(service) as conn:
            conn.sendall(b"hi")
            assert conn.recv_exactly(2) == b"hi"
            link = net.link_between("a", "b")
            net.links["a"].offline()  # router a's process still runs; the controller marks it gone
            assert conn.recv() == b""  # b dropped its link to a: the circuit across it ended
        net.timeline.wait("link", "disconnected", link_id=link.id)
    gone = net.id("a")
    assert [x for x in net.fabric.links() if x.touches(gone)] == []
    assert [c for c in net.fabric.circuits() if gone in c.path_routers] == []
    assert net.routers["b"].stats()["links"] == 0


def test_a_binder_bound_on_two_routers_stays_reachable_when_one_goes(net):
    for short in "abc":
        net.start(short)
    net.wait_links(3)
    service = net.service("both")
    binder = net.identity("binder", service, "Bind", ["a", "c"])
    dialer = net.identity("dialer", service, "Dial", ["b"])
    with SyncDataPlane.from_identity_file(binder) as host, SyncDataPlane.from_identity_file(dialer) as guest:
        host.bind(service, echo, every_router=True)
        service_id = net.ctl.access.services.find_by_name(service)["id"]
        on = {t["router_id"] for t in net.ctl.routing.terminators.of_service(service_id)}
        assert on == {net.id("a"), net.id("c")}
        assert ask(guest, service) == b"hello"
        used = net.timeline.wait("circuit", "created")[0]["path"]["nodes"][-1]
        net.stop({net.id("a"): "a", net.id("c"): "c"}[used])
        assert ask(guest, service) == b"hello"
        assert net.timeline.matching("circuit", "created")[-1]["path"]["nodes"][-1] != used


def test_a_stop_cancels_edge_and_link_connections_stuck_in_their_tls_handshake(net, monkeypatch):
    """Silent clients on the edge and the link port (TCP up, no ClientHello) hold no stop: their handshakes are
    cancelled at once, not left to their own timeout or to the wait for closing channels (both made longer than
    stop's own 15 s bound here, so a handshake left to either fails the stop)."""
    import socket
    import time

    import router.server

    monkeypatch.setattr(router.server, "SHUTDOWN_WAIT", 60.0)
    edge = net.start("a", hello_timeout=60.0)
    silent = [socket.create_connection(("127.0.0.1", port), timeout=10) for port in (edge.port, edge.link_port)]
    try:
        deadline = time.monotonic() + 10
        while len(edge.handshakes | edge.links.handshakes) < 2:  # both accepted, waiting for a ClientHello
            assert time.monotonic() < deadline, "the router never accepted the silent clients"
            time.sleep(0.02)
        net.stop("a")  # raises TimeoutError when the shutdown waits on a handshake
        assert not edge.handshakes and not edge.links.handshakes
    finally:
        for sock in silent:
            sock.close()


def test_terminators_no_live_link_reaches_are_told_apart_from_no_terminators(net):
    net.start("a"), net.start("b")
    net.wait_links(1)
    service = net.service("nopath")
    binder = net.identity("binder", service, "Bind", ["a"])
    dialer = net.identity("dialer", service, "Dial", ["b"])
    with SyncDataPlane.from_identity_file(dialer) as guest:
        with pytest.raises(DialError, match=r"service \S+ has no terminators$"):
            guest.dial(service)
        with SyncDataPlane.from_identity_file(binder) as host:
            host.bind(service, echo)
            link = net.link_between("a", "b")
            net.admin.fabric.patch_link(link.id, body={"down": True})
            with pytest.raises(DialError, match=r"service \S+ has no path to a terminator: no live link path"):
                guest.dial(service)


def test_routers_that_dial_each_other_at_once_keep_one_link_per_pair_on_both_sides(net):
    """Four routers started together each dial the other three: each pair ends with one link (the smaller link id),
    the same one in the controller's fabric and on both routers, and a dial crosses it."""
    routers = net.start_together("a", "b", "c", "d")
    ids = {router.router_id for router in routers}

    def one_per_pair() -> bool:
        up = [link for link in net.fabric.links() if {link.src_router_id, link.dst_router_id} <= ids]
        held = [sorted(router.links.by_id) for router in routers]
        return (
            len(up) == 6
            and len({frozenset((link.src_router_id, link.dst_router_id)) for link in up}) == 6
            and all(len(links) == 3 for links in held)
            and sorted(link.id for link in up) == sorted({i for links in held for i in links})
        )

    deadline = time.monotonic() + 20
    with net.timeline._cond:  # link events wake it; a router's own link table changes without one: poll it too
        while not one_per_pair() and time.monotonic() < deadline:
            net.timeline._cond.wait(0.05)
    up = [link for link in net.fabric.links() if {link.src_router_id, link.dst_router_id} <= ids]
    assert len(up) == 6 and one_per_pair(), (up, [sorted(router.links.by_id) for router in routers])
    for router in routers:
        peers = [channel.caller for channel in router.links.by_id.values()]
        assert sorted(peers) == sorted(ids - {router.router_id})
    service = net.service("dup")
    host = SyncDataPlane(*load_identity_file(net.identity("host", service, "Bind", ["a"])))
    guest = SyncDataPlane(*load_identity_file(net.identity("guest", service, "Dial", ["b"])))
    with host, guest:
        host.bind(service, named_echo(b"a"))
        assert ask(guest, service) == b"a:hello"


def test_a_control_request_that_fails_is_a_refusal_the_sdk_is_told_logged_in_one_line(net, monkeypatch, caplog):
    """The controller failing a hello or a dial (not refusing it) answers the SDK at once with the reason, and the
    router says so in one log line; nothing waits for the SDK's own timeout."""
    router = net.start("a")
    service = net.service("failing", encrypted=False)
    guest_file = net.identity("guest", service, "Dial", ["a"])
    host = SyncDataPlane(*load_identity_file(net.identity("host", service, "Bind", ["a"])))
    guest = SyncDataPlane(*load_identity_file(guest_file))
    with host, guest:
        host.bind(service, named_echo(b"a"))
        assert ask(guest, service) == b"a:hello"

        def broken(*args, **kwargs):
            raise RuntimeError("the circuit table is full")

        caplog.set_level(logging.INFO, logger="router")
        monkeypatch.setattr(net.fabric, "circuit_up", broken)
        guest.timeout = 5.0
        with pytest.raises(DialError, match="the controller failed the dial: the circuit table is full"):
            guest.dial(service)
        monkeypatch.setattr(net.links["a"], "hello", broken)
        with RawChannel(router.url, guest_file) as raw:
            refused = raw.hello()
        assert refused is not None and not refused.bool_header(Header.RESULT_SUCCESS)
        assert refused.body == b"the controller failed the hello: the circuit table is full"
    lines = [r for r in caplog.records if "the controller failed" in r.getMessage()]
    assert [r.getMessage() for r in lines][:2] == [
        "router: the controller failed the dial: the circuit table is full",
        "router: the controller failed the hello: the circuit table is full",
    ]
    assert len(lines) == 3 and lines[2].getMessage().endswith(
        "refused: the controller failed the hello: the circuit table is full"
    )  # the hello's refusal, as any
    assert all(r.exc_info is None and "\n" not in r.getMessage() for r in lines)


def test_a_router_task_that_fails_is_logged_in_one_line(net, caplog):
    router = net.start("a")
    caplog.set_level(logging.INFO, logger="router")
    failed = threading.Event()

    async def doomed():
        failed.set()
        raise ValueError("a bug\nover two lines")

    router.loop.call_soon_threadsafe(router.spawn, doomed())
    assert failed.wait(10)
    # the done callback runs on the router's loop right after the task: one more turn of that loop sees it done
    asyncio.run_coroutine_threadsafe(asyncio.sleep(0), router.loop).result(10)
    lines = [r for r in caplog.records if "doomed" in r.getMessage()]
    assert [(r.levelname, r.getMessage(), r.exc_info) for r in lines] == [
        (
            "ERROR",
            "router: test_a_router_task_that_fails_is_logged_in_one_line.<locals>.doomed failed: ValueError: "
            "a bug over two lines",
            None,
        )
    ]
