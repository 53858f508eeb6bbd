"""Time and fault control for tests of client resilience.

In-process, tests reach the controller's ``clock`` and ``faults`` directly. A controller
started in simulation mode also serves control endpoints (``ops_simulation``) so
that out-of-process clients can move its clock and inject faults; in its
default mode those routes do not exist.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Callable

from controller import errors
from controller.clock import Clock, Watchers, later, rfc3339


class SimulatedClock(Watchers, Clock):
    """Real time plus an offset that only moves forward (``watch`` callbacks run after each ``advance``)."""

    def __init__(self):
        self._offset = timedelta()
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return datetime.now(timezone.utc) + self._offset

    def advance(self, seconds: float = 0, **kwargs) -> datetime:
        with self._lock:
            self._offset += timedelta(seconds=seconds, **kwargs)
        self._moved()
        return self.now()


@dataclass
class Fault:
    """One injected fault: what it matches and what it does."""

    id: str
    path: str = ".*"  # regular expression over the request path
    method: str | None = None
    status: int | None = None  # 429 or 503 (or any status of the error catalogue) in the error envelope
    latency_ms: int = 0
    drop: bool = False
    remaining: int | None = None  # None = until removed
    hits: int = field(default=0)

    def matches(self, method: str, path: str) -> bool:
        return (self.method is None or self.method.upper() == method) and re.search(self.path, path) is not None

    def view(self) -> dict:
        return {
            "id": self.id,
            "path": self.path,
            "method": self.method,
            "status": self.status,
            "latencyMs": self.latency_ms,
            "drop": self.drop,
            "remaining": self.remaining,
            "hits": self.hits,
        }


class FaultInjector:
    """Faults per route, checked before each request is routed."""

    def __init__(self, ids, sleep=time.sleep):
        self._ids, self._sleep = ids, sleep
        self._faults: dict[str, Fault] = {}
        self._lock = threading.Lock()

    def add(
        self,
        path: str = ".*",
        *,
        method: str | None = None,
        status: int | None = None,
        latency_ms: int = 0,
        drop: bool = False,
        count: int | None = None,
    ) -> Fault:
        """Inject a fault on requests whose path matches ``path`` (a regular expression)."""
        re.compile(path)
        if status is not None and errors.code_for_status(status) is None:
            statuses = sorted({entry.status for entry in errors.CATALOGUE.values()})
            raise errors.FieldError("status", f"status must be one of {statuses}", status)
        fault = Fault(self._ids.short(), path, method, status, latency_ms, drop, count)
        with self._lock:
            self._faults[fault.id] = fault
        return fault

    def remove(self, fault_id: str | None = None) -> None:
        with self._lock:
            if fault_id is None:
                self._faults.clear()
            elif self._faults.pop(fault_id, None) is None:
                raise errors.NotFound("fault", fault_id)

    def list(self) -> list[Fault]:
        with self._lock:
            return list(self._faults.values())

    def _take(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for fault in self._faults.values():
                if fault.matches(method, path):
                    fault.hits += 1
                    if fault.remaining is not None:
                        fault.remaining -= 1
                        if fault.remaining <= 0:
                            del self._faults[fault.id]
                    return fault
        return None

    @property
    def active(self) -> bool:
        """Whether any fault is injected (``apply`` does nothing otherwise)."""
        return bool(self._faults)

    def apply(self, method: str, path: str) -> None:
        """Sleep, raise an error envelope, or raise ``DroppedConnection`` (the API layer drops the connection)."""
        if not self._faults or "/simulation/" in path:
            return
        fault = self._take(method, path)
        if fault is None:
            return
        if fault.latency_ms:
            self._sleep(fault.latency_ms / 1000)
        if fault.drop:
            raise DroppedConnection()
        if fault.status:
            # The fault names a status; the error carries the catalogue's code for it and the edge maps it back.
            raise InjectedError(errors.code_for_status(fault.status), f"injected fault ({fault.status})")


class InjectedError(errors.ControllerError):
    """An error answer chosen by a test: a catalogue code, answered with that code's status."""


class DroppedConnection(Exception):
    """The connection should end without a complete answer."""


# -- faults on one router's edge messages -------------------------------------------------------

#: the edge protocol's content types by name (channel-level ones first), as faults on a router name them
EDGE_CONTENT_TYPES = {
    "Hello": 0,
    "Ping": 1,
    "Result": 2,
    "Latency": 3,
    "LatencyResponse": 4,
    "Heartbeat": 5,
    "Connect": 60783,
    "StateConnected": 60784,
    "StateClosed": 60785,
    "Data": 60786,
    "Dial": 60787,
    "DialSuccess": 60788,
    "DialFailed": 60789,
    "Bind": 60790,
    "Unbind": 60791,
    "StateSessionEnded": 60792,
    "Probe": 60793,
    "UpdateBind": 60794,
    "HealthEvent": 60795,
    "TraceRoute": 60796,
    "TraceRouteResponse": 60797,
    "ConnInspectRequest": 60798,
    "ConnInspectResponse": 60799,
    "BindSuccess": 60800,
    "UpdateTokenSuccess": 60801,
    "UpdateTokenFailure": 60802,
    "UpdateToken": 60803,
    "InspectRequest": 60804,
    "InspectResponse": 60805,
    "PostureResponse": 10800,
}
#: which frames of a router's SDK channels a fault touches
DIRECTIONS = ("fromSdk", "toSdk", "both")


@dataclass
class RouterFault:
    """Drop or delay the edge messages of one router, until ``ends_at`` on the controller's clock (or removed)."""

    id: str
    router_id: str
    router_name: str
    direction: str
    content_types: tuple[str, ...]  # empty: every message
    drop: bool
    latency_ms: int
    seconds: float | None
    created_at: datetime
    ends_at: datetime | None
    #: the change that added it: the router applies it once it acknowledged this generation or a later one
    generation: int = 0
    hits: int = 0

    def wire(self) -> dict:
        """What the router is told (``edgeFaults``): content types as numbers, no names, no clock."""
        return {
            "id": self.id,
            "direction": self.direction,
            "contentTypes": [EDGE_CONTENT_TYPES[name] for name in self.content_types],
            "drop": self.drop,
            "latencyMs": self.latency_ms,
        }

    def view(self, now: datetime, applied: bool) -> dict:
        remaining = None if self.ends_at is None else max(0.0, (self.ends_at - now).total_seconds())
        return {
            "id": self.id,
            "router": {"id": self.router_id, "name": self.router_name},
            "direction": self.direction,
            "contentTypes": list(self.content_types),
            "drop": self.drop,
            "latencyMs": self.latency_ms,
            "seconds": self.seconds,
            "createdAt": rfc3339(self.created_at),
            "endsAt": rfc3339(self.ends_at),
            "remainingSeconds": None if remaining is None else round(remaining, 3),
            "applied": applied,
            "hits": self.hits,
        }


class RouterFaults:
    """Faults on routers' edge messages, timed on the controller's clock; each router is told its own.

    A connected router's adapter ``watch``-es its router id: it is told the router's whole set at once (a
    router that reconnects gets the faults still active) and after every change, with the change's
    generation. The router acknowledges the generation it applies (:meth:`report`, with its hit counts), and
    a change waits up to ``ack_timeout`` seconds for the connected routers it touched: when an add, a remove
    or a clock advance returns, those routers act on it. A fault ends when the controller's clock passes its
    end: a timer in real time, and at once when a simulated (or test) clock is advanced.
    """

    def __init__(self, clock: Clock, ids, *, find_router: Callable[[str], dict | None], ack_timeout: float = 5.0):
        self.clock, self._ids, self._find_router, self.ack_timeout = clock, ids, find_router, ack_timeout
        self._faults: dict[str, RouterFault] = {}
        self._watchers: dict[str, list[Callable[[int, list[dict]], None]]] = {}
        self._generation = 0
        #: router id -> the generation it acknowledged last (while it is watched)
        self._applied: dict[str, int] = {}
        self._lock = threading.RLock()
        self._acked = threading.Condition(self._lock)
        #: held while routers are told, so no router is told an older set after a newer one
        self._telling = threading.RLock()
        self._timer: threading.Timer | None = None
        self._closed = False
        watch = getattr(clock, "watch", None)
        self._unwatch_clock = watch(self.sweep) if watch is not None else None

    # -- changes -------------------------------------------------------------------------
    def add(
        self,
        router: str,
        *,
        direction: str = "both",
        content_types: list[str] | tuple[str, ...] = (),
        drop: bool = False,
        latency_ms: int = 0,
        seconds: float | None = None,
    ) -> RouterFault:
        """Drop (``drop``) or delay (``latency_ms``) the edge messages of ``router`` (an edge router's id or name)."""
        record = self._find_router(router) if router else None
        if record is None:
            raise errors.NotFound("edge-router", router)
        if direction not in DIRECTIONS:
            raise errors.FieldError("direction", f"direction must be one of {list(DIRECTIONS)}", direction)
        unknown = [name for name in content_types if name not in EDGE_CONTENT_TYPES]
        if unknown:
            raise errors.FieldError(
                "contentTypes",
                f"{unknown[0]!r} is not an edge content type: one of {list(EDGE_CONTENT_TYPES)}",
                unknown[0],
            )
        if drop == bool(latency_ms):
            raise errors.FieldError("drop", "a router fault either drops (drop: true) or delays (latencyMs > 0)", drop)
        if seconds is not None and not seconds > 0:
            raise errors.FieldError("seconds", "seconds must be above 0 (or absent: until removed)", seconds)
        now = self.clock.now()
        fault = RouterFault(
            self._ids.short(),
            record["id"],
            record.get("name") or record["id"],
            direction,
            tuple(dict.fromkeys(content_types)),
            bool(drop),
            int(latency_ms),
            seconds,
            now,
            None if seconds is None else later(now, seconds=seconds),
        )
        with self._lock:
            self._faults[fault.id] = fault
        self._changed({fault.router_id}, added=fault)
        return fault

    def remove(self, fault_id: str | None = None) -> None:
        """Remove one fault (404 if unknown) or, without an id, every fault."""
        with self._lock:
            if fault_id is None:
                gone = list(self._faults.values())
                self._faults.clear()
            else:
                fault = self._faults.pop(fault_id, None)
                if fault is None:
                    raise errors.NotFound("router fault", fault_id)
                gone = [fault]
        self._changed({fault.router_id for fault in gone})

    def sweep(self) -> None:
        """End the faults whose time on the controller's clock has passed; tell their routers."""
        now = self.clock.now()
        with self._lock:
            ended = [f for f in self._faults.values() if f.ends_at is not None and f.ends_at <= now]
            for fault in ended:
                del self._faults[fault.id]
        self._changed({fault.router_id for fault in ended})

    def report(self, router_id: str, generation: int, hits: dict[str, int]) -> None:
        """A router applies the set of ``generation`` and counted ``hits`` since its last report (``{id: n}``;
        other routers' fault ids are ignored)."""
        with self._lock:
            for fault_id, count in hits.items():
                fault = self._faults.get(fault_id)
                if fault is not None and fault.router_id == router_id:
                    fault.hits += count
            if router_id in self._watchers and generation > self._applied.get(router_id, -1):
                self._applied[router_id] = min(generation, self._generation)
                self._acked.notify_all()

    # -- reads -----------------------------------------------------------------------------
    def list(self) -> list[RouterFault]:
        self.sweep()
        with self._lock:
            return list(self._faults.values())

    def get(self, fault_id: str) -> RouterFault:
        self.sweep()
        with self._lock:
            fault = self._faults.get(fault_id)
        if fault is None:
            raise errors.NotFound("router fault", fault_id)
        return fault

    def applied(self, fault: RouterFault) -> bool:
        """Whether the fault's router is connected and acknowledged the change that added it."""
        with self._lock:
            return self._applied.get(fault.router_id, -1) >= fault.generation

    def of_router(self, router_id: str) -> list[dict]:
        """What ``router_id`` is told: its active faults, oldest first."""
        with self._lock:
            return [f.wire() for f in self._faults.values() if f.router_id == router_id]

    def watch(self, router_id: str, changed: Callable[[int, list[dict]], None]) -> Callable[[], None]:
        """``changed(generation, faults)`` now if ``router_id`` has faults, and after each change of its faults
        (never waits for an acknowledgement); returns the unwatch function. A router starts, and reconnects,
        with none (``router/faults.py``), so an empty set is not sent at once."""
        with self._telling:
            with self._lock:
                self._watchers.setdefault(router_id, []).append(changed)
                generation, faults = self._generation, self.of_router(router_id)
            if faults:
                changed(generation, faults)

        def unwatch() -> None:
            with self._lock:
                watchers = self._watchers.get(router_id, [])
                if changed in watchers:
                    watchers.remove(changed)
                if not watchers:
                    self._watchers.pop(router_id, None)
                    self._applied.pop(router_id, None)
                self._acked.notify_all()

        return unwatch

    # -- inside ----------------------------------------------------------------------------
    def _changed(self, router_ids: set[str], added: RouterFault | None = None) -> None:
        if router_ids:
            with self._telling:
                with self._lock:
                    self._generation += 1
                    generation = self._generation
                    if added is not None:
                        added.generation = generation
                    told = [(r, self.of_router(r), list(self._watchers.get(r, ()))) for r in router_ids]
                for _router_id, faults, watchers in told:
                    for changed in watchers:
                        changed(generation, faults)
            self._wait_applied(router_ids, generation)
        self._schedule()

    def _wait_applied(self, router_ids: set[str], generation: int) -> None:
        """Until each connected router of ``router_ids`` acknowledged ``generation`` (at most ``ack_timeout``)."""
        deadline = time.monotonic() + self.ack_timeout
        with self._acked:
            while not self._closed:
                waiting = [r for r in router_ids if r in self._watchers and self._applied.get(r, -1) < generation]
                left = deadline - time.monotonic()
                if not waiting or left <= 0:
                    return
                self._acked.wait(left)

    def _schedule(self) -> None:
        """One timer, for the soonest end (real time; a jump of a simulated clock sweeps at once)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            ends = [f.ends_at for f in self._faults.values() if f.ends_at is not None]
            if not ends or self._closed:
                return
            delay = max(0.01, (min(ends) - self.clock.now()).total_seconds())
            self._timer = threading.Timer(min(delay, 3600.0), self.sweep)
            self._timer.daemon = True
            self._timer.start()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._acked.notify_all()
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        if self._unwatch_clock is not None:
            self._unwatch_clock()
