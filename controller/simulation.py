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

from controller import errors
from controller.clock import Clock


class SimulatedClock(Clock):
    """Real time plus an offset that only moves forward."""

    def __init__(self):
        self._offset = timedelta()
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return datetime.now(timezone.utc) + self._offset

    def advance(self, seconds: float = 0, **kwargs) -> datetime:
        with self._lock:
            self._offset += timedelta(seconds=seconds, **kwargs)
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
