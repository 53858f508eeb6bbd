"""Faults on one router's edge messages: dropped or delayed SDK frames, for a while on the controller's clock.

A controller in simulation mode with its embedded router (``quickstart-router``) and one router run as its own
process (``router-1``); a service pinned to each (both its identities may use that router only), echoed through
the harness's data plane. A fault is set through the simulation endpoints (``RouterNetwork.drop_edge`` and
``delay_edge``); advancing the controller's clock ends it, and the router acts on every change before the
endpoint answers.
"""

from __future__ import annotations

import hashlib
import threading
import time

import pytest

from harness.client import ZitiClient
from harness.dataplane.sync import SyncDataPlane, echo
from harness.processes.quickstart import new_quickstart
from harness.processes.routers import RouterError, RouterNetwork, start_router_network
from harness.processes.server import LocalController

EMBEDDED, PROCESS = "quickstart-router", "router-1"
#: seconds a dial or read may take before it counts as stalled (a fault drops what would answer it)
STALL = 1.0
DEADLINE = 20.0


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    network = start_router_network(1, folder=tmp_path_factory.mktemp("edge-faults"), simulation=True, router=True)
    admin = network.admin
    try:
        for policy in admin.management.list_edge_router_policies(filter='name = "all-endpoints-public-routers"'):
            admin.management.delete_edge_router_policy(policy["id"])  # each service's identities use one router
        network.services = {}
        for router, stem in ((EMBEDDED, "ef-embedded"), (PROCESS, "ef-process")):
            router_id = admin.management.list_edge_routers(filter=f'name = "{router}"')[0]["id"]
            admin.management.create_edge_router_policy(
                body={
                    "name": stem,
                    "semantic": "AnyOf",
                    "identityRoles": [f"#{stem}-dialer", f"#{stem}-binder"],
                    "edgeRouterRoles": [f"@{router_id}"],
                }
            )
            folder = tmp_path_factory.mktemp(stem)
            network.services[router] = new_quickstart(
                admin, folder, stem, controller_url=network.controller.https_url, router_url=""
            )
        yield network
    finally:
        network.stop()


class Echo:
    """A binder and a dialer of the service pinned to one router."""

    def __init__(self, quickstart):
        self.service = quickstart.service
        self.host = SyncDataPlane.from_identity_file(quickstart.binder)
        self.guest = SyncDataPlane.from_identity_file(quickstart.dialer)
        self.host.bind(self.service, echo)

    def once(self, payload: bytes = b"ping", timeout: float = 10.0) -> bytes:
        """Dial, send ``payload`` and read it back, each step within ``timeout``."""
        self.guest.timeout = timeout
        with self.guest.dial(self.service) as conn:
            conn.sendall(payload)
            return conn.recv_exactly(len(payload))

    def close(self) -> None:
        self.guest.close()
        self.host.close()


@pytest.fixture
def echoes(net):
    opened = {}
    try:
        for router, quickstart in net.services.items():
            opened[router] = Echo(quickstart)
        yield opened
    finally:
        net.clear_edge_faults()
        for pair in opened.values():
            pair.close()


def wait_for(predicate, what: str, timeout: float = DEADLINE):
    """Poll a real router (or the controller it reports to) until ``predicate()`` is truthy."""
    end = time.monotonic() + timeout
    while not (value := predicate()):
        assert time.monotonic() < end, what
        time.sleep(0.02)
    return value


def advance(net, seconds: float) -> None:
    net.admin.management.call("advanceSimulationClock", body={"seconds": seconds})


# -- drop --------------------------------------------------------------------------------


@pytest.mark.parametrize("faulted, spared", [(EMBEDDED, PROCESS), (PROCESS, EMBEDDED)])
def test_a_drop_stalls_only_its_router_and_ends_when_the_controllers_clock_passes_it(net, echoes, faulted, spared):
    assert echoes[faulted].once(b"before") == b"before"
    fault_id = net.drop_edge(faulted, seconds=120)

    [fault] = net.edge_faults(faulted)
    assert (fault["id"], fault["drop"], fault["direction"], fault["contentTypes"]) == (fault_id, True, "both", [])
    assert fault["applied"] is True and 0 < fault["remainingSeconds"] <= 120
    with pytest.raises(TimeoutError):
        echoes[faulted].once(b"during", timeout=STALL)  # its Connect never reaches the router's handlers
    assert echoes[spared].once(b"elsewhere") == b"elsewhere"  # the other router is untouched
    assert net.edge_faults(spared) == []
    hits = wait_for(lambda: net.edge_faults(faulted)[0]["hits"], "the router reports the messages it dropped")
    assert hits >= 1

    advance(net, 60)
    [fault] = net.edge_faults(faulted)
    assert 0 < fault["remainingSeconds"] <= 60  # half way: still on
    with pytest.raises(TimeoutError):
        echoes[faulted].once(b"still", timeout=STALL)
    advance(net, 60)  # past its end: the router stopped dropping before the clock answered
    assert echoes[faulted].once(b"after", timeout=5) == b"after"
    assert net.edge_faults() == []


def test_a_drop_of_some_content_types_in_one_direction_lets_the_others_through(net, echoes):
    pair = echoes[EMBEDDED]
    net.drop_edge(EMBEDDED, direction="fromSdk", content_types=["Data"])
    pair.guest.timeout = STALL
    with pair.guest.dial(pair.service) as conn:  # Connect, Dial, DialSuccess and StateConnected pass
        conn.sendall(b"lost")  # the SDKs' Data does not
        with pytest.raises(TimeoutError):
            conn.recv_exactly(4)
    [fault] = wait_for(lambda: [f for f in net.edge_faults(EMBEDDED) if f["hits"]], "hits")
    assert fault["contentTypes"] == ["Data"] and fault["direction"] == "fromSdk"
    assert net.clear_edge_faults(EMBEDDED) == 1
    assert pair.once(b"back") == b"back"


def test_a_fault_ends_by_itself_when_its_time_passes_in_real_time(net, echoes):
    net.drop_edge(EMBEDDED, seconds=1.5)
    with pytest.raises(TimeoutError):
        echoes[EMBEDDED].once(b"during", timeout=0.5)
    wait_for(lambda: net.edge_faults() == [], "the fault ends 1.5 s after it began", timeout=10)
    assert echoes[EMBEDDED].once(b"after") == b"after"


# -- delay -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "router, direction, content_types, crossings",
    [
        (PROCESS, "both", [], 4),  # dialer -> router -> binder -> router -> dialer: four SDK frames held
        (EMBEDDED, "toSdk", ["Data"], 2),  # to the binder, and back to the dialer
        (PROCESS, "fromSdk", ["Data", "StateClosed"], 2),  # from the dialer, and from the binder
    ],
)
def test_a_delay_holds_each_matching_message_for_its_latency(net, echoes, router, direction, content_types, crossings):
    latency_ms = 150
    pair = echoes[router]
    with pair.guest.dial(pair.service) as conn:
        conn.sendall(b"warm")
        assert conn.recv_exactly(4) == b"warm"
        fault_id = net.delay_edge(router, latency_ms, seconds=300, direction=direction, content_types=content_types)
        began = time.monotonic()
        conn.sendall(b"slow")
        assert conn.recv_exactly(4) == b"slow"
        took = time.monotonic() - began
    assert took >= crossings * latency_ms / 1000
    [fault] = wait_for(lambda: [f for f in net.edge_faults(router) if f["hits"] >= crossings], "hits")
    assert (fault["id"], fault["latencyMs"], fault["drop"]) == (fault_id, latency_ms, False)


def digest_after_eof(conn) -> None:
    """A bind handler that answers the length and SHA-256 of everything it read, once the dialer half-closed."""
    hasher, size = hashlib.sha256(), 0
    while chunk := conn.recv():
        hasher.update(chunk)
        size += len(chunk)
    conn.sendall(size.to_bytes(8, "big") + hasher.digest())


def test_a_delayed_bulk_transfer_arrives_whole_and_in_order_with_the_held_frames_bounded(net):
    """Held frames count as written: a fast sender is slowed down rather than held without bound."""
    from router.channel import CHANNEL_HIGH
    from router.faults import HELD_IN_LIMIT

    quickstart, router = net.services[EMBEDDED], net.controller.router
    payload = hashlib.sha256(b"seed").digest() * (8 * 2**20 // 32)  # 8 MiB
    most = {"in": 0, "out": 0}
    sampling = threading.Event()

    def sample() -> None:  # reads two integers the router's loop writes: a bound seen broken is broken
        while not sampling.wait(0.002):
            for channel in list(router.edge_faults.channels):
                for side, held in (("in", channel.held_in), ("out", channel.held_out)):
                    if held is not None:
                        most[side] = max(most[side], held.size)

    host = SyncDataPlane.from_identity_file(quickstart.binder)
    guest = SyncDataPlane.from_identity_file(quickstart.dialer)
    sampler = threading.Thread(target=sample)
    try:
        host.bind(quickstart.service, digest_after_eof)
        net.delay_edge(EMBEDDED, 100, content_types=["Data"])
        sampler.start()
        with guest.dial(quickstart.service) as conn:
            for offset in range(0, len(payload), 64 * 1024):
                conn.sendall(payload[offset : offset + 64 * 1024])
            conn.shutdown_write()
            answer = conn.recv_exactly(40)
    finally:
        sampling.set()
        if sampler.ident is not None:
            sampler.join()
        net.clear_edge_faults()
        guest.close()
        host.close()
    assert answer == len(payload).to_bytes(8, "big") + hashlib.sha256(payload).digest()
    assert 0 < most["out"] <= CHANNEL_HIGH + 2 * 64 * 1024  # a frame may pass the mark before the outlet queues
    assert 0 < most["in"] <= HELD_IN_LIMIT + 2 * 64 * 1024


# -- reconnecting routers, and the Python API's errors ----------------------------------------------


def test_a_router_that_reconnects_gets_the_faults_still_active(net, echoes):
    router, quickstart = net[PROCESS], net.services[PROCESS]
    fault_id = router.drop_edge()  # until removed
    router.restart()
    router.wait_online()
    wait_for(lambda: router.edge_faults()[0]["applied"], "the restarted router acknowledges the fault")
    host = SyncDataPlane.from_identity_file(quickstart.binder)
    host.timeout = STALL
    try:
        with pytest.raises(TimeoutError):  # even its hello is dropped: no channel, no bind
            host.bind(quickstart.service, echo)
    finally:
        host.close()
    [fault] = router.edge_faults()
    assert fault["id"] == fault_id and fault["hits"] >= 1
    assert router.clear_edge_faults() == 1
    echoes[PROCESS].close()
    echoes[PROCESS] = Echo(quickstart)  # the restarted router lost the old binding
    assert echoes[PROCESS].once(b"after restart") == b"after restart"


def test_the_python_api_says_what_is_wrong_in_one_line(net, tmp_path):
    with pytest.raises(RouterError, match=r"^no edge router 'nope' on the controller$"):
        net.drop_edge("nope")
    with pytest.raises(RouterError, match=r"^the controller refused the fault: 'Date' is not an edge content type"):
        net.drop_edge(PROCESS, content_types=["Date"])
    with pytest.raises(RouterError, match=r"^the controller refused the fault: .*drops .* or delays"):
        net.delay_edge(PROCESS, 0)
    assert net.edge_faults() == []
    with LocalController(router=True) as plain, ZitiClient.connect(plain.url) as admin:  # not in simulation mode
        admin.login("admin", "admin")
        with pytest.raises(RouterError, match=r"^the controller is not in simulation mode: start it with --simulation"):
            RouterNetwork(admin, tmp_path).drop_edge(EMBEDDED, seconds=5)
