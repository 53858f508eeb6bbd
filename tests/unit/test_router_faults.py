"""The controller's faults on routers' edge messages: names, timing on the controller's clock, acknowledgements."""

from __future__ import annotations

import re
import threading

import pytest

from controller import errors
from controller.clock import FrozenClock
from controller.ids import Ids
from controller.simulation import EDGE_CONTENT_TYPES, RouterFaults
from router.wire import ContentType

ROUTERS = {"r1": {"id": "r1", "name": "one"}, "r2": {"id": "r2", "name": "two"}}


def find(key: str):
    return ROUTERS.get(key) or next((r for r in ROUTERS.values() if r["name"] == key), None)


class Router:
    """A router as the registry sees it: told each set, acknowledging it (or not) from its own thread."""

    def __init__(self, faults: RouterFaults, router_id: str, ack: bool = True):
        self.faults, self.router_id, self.ack = faults, router_id, ack
        self.told: list[tuple[int, list[dict]]] = []
        self.unwatch = faults.watch(router_id, self.changed)

    def changed(self, generation: int, faults: list[dict]) -> None:
        self.told.append((generation, faults))
        if self.ack:
            threading.Thread(target=self.faults.report, args=(self.router_id, generation, {})).start()


@pytest.fixture
def clock():
    return FrozenClock("2025-06-01T12:00:00Z")


@pytest.fixture
def faults(clock):
    registry = RouterFaults(clock, Ids(seed=1), find_router=find, ack_timeout=5.0)
    yield registry
    registry.close()


def test_the_content_type_names_are_the_routers_own_numbers():
    for name, number in EDGE_CONTENT_TYPES.items():
        constant = re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()
        if hasattr(ContentType, constant):
            assert getattr(ContentType, constant) == number, name
    assert EDGE_CONTENT_TYPES["Data"] == ContentType.DATA and EDGE_CONTENT_TYPES["Hello"] == ContentType.HELLO


def test_a_change_returns_once_the_router_applies_it_and_the_clock_ends_the_fault(faults, clock):
    router = Router(faults, "r1")
    assert router.told == []  # nothing to tell a router without faults
    fault = faults.add("one", drop=True, seconds=30, content_types=["Connect", "Connect"])
    assert faults.applied(fault)  # acknowledged before add returned
    [(generation, told)] = router.told
    assert told == [{"id": fault.id, "direction": "both", "contentTypes": [60783], "drop": True, "latencyMs": 0}]
    faults.report("r1", generation, {fault.id: 3, "unknown": 5})
    faults.report("r2", generation, {fault.id: 100})  # another router's report does not count here
    assert fault.hits == 3
    clock.advance(seconds=29)
    assert [f.id for f in faults.list()] == [fault.id] and len(router.told) == 1
    clock.advance(seconds=1)  # its end: the router is told the empty set before advance returns
    assert router.told[-1][1] == [] and router.told[-1][0] > generation
    assert faults.list() == []


def test_only_the_faulted_router_is_told_and_a_reconnect_gets_the_active_set(faults):
    one, two = Router(faults, "r1"), Router(faults, "r2")
    fault = faults.add("r2", latency_ms=50, direction="toSdk")
    assert one.told == [] and [f["id"] for f in two.told[-1][1]] == [fault.id]
    two.unwatch()
    assert not faults.applied(fault)  # gone with its control channel
    again = Router(faults, "r2")
    assert [f["id"] for f in again.told[0][1]] == [fault.id]
    assert faults.applied(fault)


def test_a_router_that_never_acknowledges_holds_a_change_for_the_timeout_only(clock):
    faults = RouterFaults(clock, Ids(seed=2), find_router=find, ack_timeout=0.2)
    try:
        silent = Router(faults, "r1", ack=False)
        fault = faults.add("r1", drop=True)
        assert silent.told and not faults.applied(fault)
        faults.remove(fault.id)
        assert silent.told[-1][1] == []
    finally:
        faults.close()


@pytest.mark.parametrize(
    "router, options, field",
    [
        ("r1", {}, "drop"),
        ("r1", {"drop": True, "latency_ms": 5}, "drop"),
        ("r1", {"drop": True, "direction": "sideways"}, "direction"),
        ("r1", {"drop": True, "content_types": ["Date"]}, "contentTypes"),
        ("r1", {"drop": True, "seconds": 0}, "seconds"),
    ],
)
def test_a_fault_that_is_not_exactly_a_drop_or_a_delay_is_refused_and_nothing_is_kept(faults, router, options, field):
    with pytest.raises(errors.FieldError) as caught:
        faults.add(router, **options)
    assert caught.value.field == field and faults.list() == []


def test_an_unknown_router_or_fault_is_not_found(faults):
    with pytest.raises(errors.NotFound):
        faults.add("r9", drop=True)
    with pytest.raises(errors.NotFound):
        faults.remove("nope")
    with pytest.raises(errors.NotFound):
        faults.get("nope")
