"""The embedded router's dial is answered in the router's own loop while the store is free (``RouterLink.dial_now``,
tried first by ``router.edge.ask``): no worker thread out and back. When another thread holds the store the dial
waits for it on a worker instead, never in the loop (which keeps serving meanwhile).

An SDK's request starts at once (``EdgeRouter.spawn(now=True)``): its first step runs as its frame is read, a task
carries it on only once it waits."""

from __future__ import annotations

import asyncio
import logging
import time

from harness.dataplane import flows
from harness.dataplane.sync import SyncDataPlane, echo
from router.channel import running_in
from router.wire import ContentType as CT
from router.wire import Header, Message, u32
from tests.router.raw import RawChannel
from tests.support import store_held


def answered_where(net, monkeypatch, short: str) -> list[str]:
    """Where router ``short``'s dials are answered: ``"loop"`` (the router's) or ``"worker"``."""
    where, dial, router = [], net.links[short].dial, net.routers[short]

    def watched(*args):
        where.append("loop" if running_in(router.loop) else "worker")
        return dial(*args)

    monkeypatch.setattr(net.links[short], "dial", watched)
    return where


def test_a_dial_is_answered_in_the_routers_loop_and_on_a_worker_while_the_store_is_held(net, monkeypatch):
    net.start("a")
    service = net.service("now", encrypted=False)
    binder = net.identity("now-binder", service, "Bind", ["a"])
    dialer = net.identity("now-dialer", service, "Dial", ["a"])
    where = answered_where(net, monkeypatch, "a")
    with SyncDataPlane.from_identity_file(binder) as host, SyncDataPlane.from_identity_file(dialer) as guest:
        host.bind(service, echo)
        with guest.dial(service) as conn:
            conn.sendall(b"in the loop")
            assert conn.recv_exactly(11) == b"in the loop"
        assert where == ["loop"]

        with store_held(net.ctl.store, 0.5) as released:
            with guest.dial(service) as conn:
                connected = time.monotonic()
                conn.sendall(b"on a worker")
                assert conn.recv_exactly(11) == b"on a worker"
    assert where == ["loop", "worker"]
    assert released and connected >= released[0]


def test_a_connect_reaches_the_host_before_the_frames_read_behind_it(net, monkeypatch):
    """One channel binds and dials: its Connect and a latency probe leave in one write. The Connect's first step
    (the controller's answer, the host's Dial) runs as it is read, so the Dial comes back ahead of the probe's
    answer; as a task started on the loop's next turn it came behind it."""
    net.start("a")
    service = net.service("eager", encrypted=False)
    both = net.identity("eager-both", service, ("Bind", "Dial"), ["a"])
    where = answered_where(net, monkeypatch, "a")
    with RawChannel(net.routers["a"].url, both) as channel:
        channel.hello()
        bind = flows.dial(channel.client, service, "Bind")["token"].encode()
        channel.send(Message(CT.BIND, bind, {Header.CONN_ID: u32(1), Header.SUPPORTS_BIND_SUCCESS: b"\x01"}))
        assert [channel.recv().content_type for _ in range(2)] == [CT.STATE_CONNECTED, CT.BIND_SUCCESS]
        dial = flows.dial(channel.client, service, "Dial")["token"].encode()
        connect = Message(CT.CONNECT, dial, {Header.CONN_ID: u32(2)}, seq=10)
        probe = Message(CT.LATENCY, b"", {}, seq=11)
        channel.send_bytes(connect.encode() + probe.encode())
        first, second = channel.recv(), channel.recv()
    assert where == ["loop"]  # answered in the loop as the Connect was read (a worker would answer later)
    assert (first.content_type, first.conn_id) == (CT.DIAL, 1)
    assert (second.content_type, second.reply_for) == (CT.RESULT, probe.seq)


def test_a_request_started_at_once_goes_on_as_a_task_the_router_can_cancel(net, caplog):
    router = net.start("a")
    seen: list[str] = []

    async def request(gate: asyncio.Future) -> None:
        seen.append("began")
        try:
            seen.append(await gate)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def refused() -> None:
        raise RuntimeError("no such session")

    async def started() -> tuple[list[str], list[asyncio.Task], set[asyncio.Task]]:
        loop = asyncio.get_running_loop()
        gates, tasks = (loop.create_future(), loop.create_future()), []
        for gate in gates:
            before = set(router.tasks)
            router.spawn(request(gate), now=True)
            tasks += router.tasks - before  # the task that carries it on
        began = list(seen)  # before the loop turned
        before = set(router.tasks)
        router.spawn(refused(), now=True)
        refused_tasks = router.tasks - before
        gates[0].set_result("answered")
        await asyncio.sleep(0.05)
        tasks[1].cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return began, tasks, (router.tasks & set(tasks)) | refused_tasks

    with caplog.at_level(logging.ERROR, logger="router"):
        began, tasks, left = asyncio.run_coroutine_threadsafe(started(), router.loop).result(10)
    assert began == ["began", "began"] and len(tasks) == 2 and not left
    assert seen == ["began", "began", "answered", "cancelled"]
    assert [t.get_name() for t in tasks] == [request.__qualname__] * 2
    assert (
        "router: test_a_request_started_at_once_goes_on_as_a_task_the_router_can_cancel.<locals>.refused "
        "failed: RuntimeError: no such session" in caplog.text
    )
