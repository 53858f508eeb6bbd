"""The embedded router's dial is answered in the router's own loop while the store is free (``RouterLink.dial_now``,
tried first by ``router.edge.ask``): no worker thread out and back. When another thread holds the store the dial
waits for it on a worker instead, never in the loop (which keeps serving meanwhile)."""

from __future__ import annotations

import time

from harness.dataplane.sync import SyncDataPlane, echo
from router.channel import running_in
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
