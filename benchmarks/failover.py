"""Failover: time from SIGKILL of the router carrying a dialer's circuit to a successful dial through another.

Run: ``python -m benchmarks --only failover [--quick]``. A controller with its control channel and two
edge routers as their own processes (``harness.processes.routers``); a binder bound on both routers, a dialer that
may use both. Each round: dial and echo (the circuit's first router is the one the dialer used), SIGKILL
that router, then dial again until an echo comes back (bounded); the figure is the median of that time,
printed beside the anchor of the same run, a dial and echo with nothing failing. The killed router is
restarted (and waited online) and the binder binds again before the next round.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from harness.dataplane.sync import SyncDataPlane, echo
from harness.processes.quickstart import new_quickstart
from harness.processes.routers import start_router_network

#: how long one round may wait for a dial through the other router
ROUND_DEADLINE = 30.0


def _echo(guest: SyncDataPlane, service: str) -> None:
    with guest.dial(service) as conn:
        conn.sendall(b"ping")
        if conn.recv_exactly(4) != b"ping":
            raise RuntimeError("the echo answered something else")


def _first_router(admin, service_id: str) -> str:
    """The router the dialer entered by: the first node of its circuit's path (reported right after the dial)."""
    end = time.perf_counter() + 5
    while time.perf_counter() < end:
        for circuit in admin.fabric.list_circuits():
            if circuit["service"]["id"] == service_id:
                return circuit["path"]["nodes"][0]["name"]
        time.sleep(0.01)
    raise RuntimeError(f"no circuit of the service: {admin.fabric.list_circuits()}")


def main(quick: bool = False) -> dict:
    rounds = 3 if quick else 7
    figures: dict = {}
    with start_router_network(2) as net:
        folder = Path(tempfile.mkdtemp(prefix="ziti-failover-"))
        qs = new_quickstart(
            net.admin, folder, "failover", controller_url=net.controller.https_url, router_url=net["router-1"].url
        )
        [service] = net.admin.management.list_services(filter='name = "failover"')
        anchors, failovers = [], []
        with SyncDataPlane.from_identity_file(qs.binder) as host:
            host.bind("failover", echo, every_router=True)
            time.sleep(0.5)  # both terminators registered (a benchmark, not a test)
            with SyncDataPlane.from_identity_file(qs.dialer) as guest:
                for _ in range(rounds):
                    started = time.perf_counter()
                    with guest.dial("failover") as conn:
                        conn.sendall(b"ping")
                        conn.recv_exactly(4)
                        used = _first_router(net.admin, service["id"])
                    anchors.append(time.perf_counter() - started)
                    killed = net[used]
                    killed.kill()
                    started = time.perf_counter()
                    while True:
                        try:
                            _echo(guest, "failover")
                            break
                        except Exception as ex:  # noqa: BLE001 - the dialer reconnects meanwhile; bounded below
                            if time.perf_counter() - started > ROUND_DEADLINE:
                                raise RuntimeError(f"no dial through the other router within 30 s: {ex!r}") from None
                            time.sleep(0.01)
                    failovers.append(time.perf_counter() - started)
                    killed.restart()
                    killed.wait_online()
                    host.bind("failover", echo, every_router=True)  # the binder binds on the router back again
                    time.sleep(0.5)  # its terminators registered (a benchmark, not a test)
        median_ok, median_failover = statistics.median(anchors), statistics.median(failovers)
        figures["anchor: dial + echo, nothing failing (ms, median)"] = median_ok * 1000
        figures["SIGKILL -> echo through the other router (ms, median)"] = median_failover * 1000
        figures["SIGKILL -> echo through the other router (ms, max)"] = max(failovers) * 1000
        figures["ratio failover / plain dial"] = median_failover / median_ok
        figures["rounds"] = rounds
    return figures


if __name__ == "__main__":
    for key, value in main().items():
        print(f"{key:<56} {value:,.3f}" if isinstance(value, float) else f"{key:<56} {value}")
