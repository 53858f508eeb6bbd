"""One injectable clock behind every timestamp and expiry.

Tests freeze and advance a :class:`FrozenClock` instead of sleeping.
"""

from __future__ import annotations

import re
import threading
from datetime import datetime, timedelta, timezone
from typing import Callable

#: Go's zero ``time.Time`` as the real controller renders it (e.g. a signer without a certificate)
ZERO_TIME = "0001-01-01T00:00:00.000Z"


def utc(dt: datetime) -> datetime:
    """Return ``dt`` as an aware UTC datetime."""
    if dt.tzinfo is None:
        return dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc)


#: the last representable instant: sums past it are clamped here (an endless timeout, a forever disable)
MAX_TIME = datetime.max.replace(tzinfo=timezone.utc)


def later(dt: datetime, **delta) -> datetime:
    """``dt + timedelta(**delta)``, clamped to :data:`MAX_TIME` instead of overflowing."""
    try:
        return dt + timedelta(**delta)
    except OverflowError:
        return MAX_TIME


def rfc3339(dt: datetime | None) -> str | None:
    """Format as RFC 3339 with milliseconds, e.g. ``2024-05-01T12:34:56.789Z``."""
    if dt is None:
        return None
    dt = utc(dt)
    # NOTE(harden): strftime("%Y") does not pad years below 1000 on glibc; write all four digits.
    return f"{dt.year:04d}-" + dt.strftime("%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


_RFC3339 = re.compile(r"(\d{4}-\d\d-\d\d)[Tt](\d\d:\d\d:\d\d)(?:\.(\d+))?([Zz]|[+-]\d\d:?\d\d)", re.ASCII)


def parse_rfc3339(text: str) -> datetime:
    """Parse an RFC 3339 date-time; raise ValueError when it is not one (or falls outside years 1-9999 in UTC)."""
    match = _RFC3339.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"not an RFC 3339 date-time: {text!r}")
    day, clock, fraction, zone = match.groups()
    micros = (fraction or "")[:6].ljust(6, "0")
    zone = "+00:00" if zone in "zZ" else zone
    try:
        return utc(datetime.fromisoformat(f"{day}T{clock}.{micros}{zone}"))
    except OverflowError as ex:  # e.g. 0001-01-01T00:00:00+01:00 is before year 1 in UTC
        raise ValueError(f"date-time out of range: {text!r}") from ex


class Clock:
    """The real clock."""

    def now(self) -> datetime:
        return datetime.now(timezone.utc)


class Watchers:
    """``watch(callback)``: called after each jump of a clock that a test or simulation moves (never under its lock)."""

    def watch(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` after each ``advance``/``set``; returns the function that stops it."""
        callbacks = self.__dict__.setdefault("_watchers", [])
        callbacks.append(callback)

        def stop() -> None:
            if callback in callbacks:
                callbacks.remove(callback)

        return stop

    def _moved(self) -> None:
        for callback in list(self.__dict__.get("_watchers", ())):
            callback()


class FrozenClock(Watchers, Clock):
    """A clock that stands still until told to move."""

    def __init__(self, start: datetime | str | None = None):
        if start is None:
            start = datetime(2025, 1, 1, tzinfo=timezone.utc)
        elif isinstance(start, str):
            start = parse_rfc3339(start)
        self._now = utc(start)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float = 0, **kwargs) -> datetime:
        """Move forward by ``seconds`` plus any ``timedelta`` keyword arguments."""
        with self._lock:
            self._now += timedelta(seconds=seconds, **kwargs)
            now = self._now
        self._moved()
        return now

    def set(self, when: datetime | str) -> datetime:
        with self._lock:
            self._now = utc(parse_rfc3339(when) if isinstance(when, str) else when)
            now = self._now
        self._moved()
        return now
