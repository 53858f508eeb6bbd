"""Identity tracing (``PUT /identities/{id}/trace``): in memory, like the real controller's.

While an identity is traced, every event about it carries the ``trace_id``.
"""

from __future__ import annotations

import re
import threading
from datetime import datetime, timedelta

from controller.clock import Clock, rfc3339
from controller.errors import FieldError
from controller.ids import Ids
from controller.model.identity import IdentityManager

DEFAULT_DURATION = timedelta(minutes=10)
MAX_NANOSECONDS = 2**63 - 1
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_go_duration(text: str) -> timedelta:
    """Go's ``time.ParseDuration`` for non-negative values: ``90s``, ``1h30m``, ``2.5m``."""
    if text == "0":
        return timedelta(0)
    position, seconds = 0, 0.0
    for match in _PART.finditer(text):
        if match.start() != position:
            break
        seconds += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    # Go's durations are int64 nanoseconds (about 292 years); longer ones are invalid there too.
    if position != len(text) or not text or seconds * 1e9 > MAX_NANOSECONDS:
        raise FieldError("duration", f'time: invalid duration "{text}"', text)
    return timedelta(seconds=seconds)


class TraceManager:
    def __init__(self, *, identities: IdentityManager, clock: Clock, ids: Ids, events):
        self.identities, self.clock, self.ids, self.events = identities, clock, ids, events
        self._lock = threading.Lock()
        #: identity id -> (trace id, until, channels)
        self._traces: dict[str, tuple[str, datetime, list[str]]] = {}

    def update(self, identity_id: str, spec: dict) -> dict:
        """Enable or disable tracing of an identity; the trace detail ``{enabled, traceId, until}``."""
        self.identities.get(identity_id)
        duration = parse_go_duration(spec["duration"]) if spec.get("duration") else DEFAULT_DURATION
        trace_id = spec.get("traceId") or self.ids.uuid()
        if not spec.get("enabled"):
            with self._lock:
                previous = self._traces.pop(identity_id, None)
            trace_id = spec.get("traceId") or (previous[0] if previous else "")
            self.events.emit("edge.trace", "disabled", identity_id=identity_id, trace_id=trace_id)
            return {"enabled": False, "traceId": trace_id, "until": None}
        until = self.clock.now() + duration
        with self._lock:
            self._traces[identity_id] = (trace_id, until, list(spec.get("channels") or []))
        self.events.emit(
            "edge.trace",
            "enabled",
            identity_id=identity_id,
            trace_id=trace_id,
            until=rfc3339(until),
            channels=list(spec.get("channels") or []),
        )
        return {"enabled": True, "traceId": trace_id, "until": rfc3339(until)}

    def trace_id_of(self, identity_id: str) -> str | None:
        """The active trace id of an identity, or None (expired traces end by the clock)."""
        with self._lock:
            trace = self._traces.get(identity_id)
            if trace is None:
                return None
            if trace[1] <= self.clock.now():
                del self._traces[identity_id]
                return None
            return trace[0]
