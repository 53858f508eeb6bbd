"""Stopping a process on SIGINT or SIGTERM: the router's, the controller's and the harness's commands.

Python runs a signal handler in the main thread between two bytecodes, so possibly while that thread is inside
``stop.wait`` and holds the event's lock: a handler that called ``stop.set()`` there waited for that lock, held
by its own thread, for ever (seen: ``python -m controller`` that never exited on SIGTERM, its main thread in
``Event.set`` under ``Event.wait``). So the handler only marks the signal (an attribute store takes no lock) and
the main thread's waiting loop, :func:`wait_for_stop`, sets ``stop`` when it sees the mark.

The loop wakes every :data:`SIGNAL_CHECK` seconds: a signal the kernel hands to another thread does not
interrupt the main thread's wait, and Python runs the handler only once that thread wakes.
"""

from __future__ import annotations

import signal
import threading
import time
from typing import Callable

#: how often the main thread waiting for ``stop`` wakes (so a signal is acted on within this)
SIGNAL_CHECK = 0.1


def stop_on_signals(stop: threading.Event) -> None:
    """From now on SIGINT and SIGTERM end :func:`wait_for_stop` on ``stop`` (and set it)."""

    def seen(*_) -> None:
        stop.signalled = True  # no lock: see the module text

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, seen)


def wait_for_stop(stop: threading.Event, tick: Callable[[], None] | None = None, every: float = 5.0) -> None:
    """Return once ``stop`` is set, or a signal :func:`stop_on_signals` watches came (``stop`` is set then);
    meanwhile ``tick()`` every ``every`` seconds."""
    due = time.monotonic() + every
    while not stop.wait(SIGNAL_CHECK):
        if getattr(stop, "signalled", False):
            stop.set()
            return
        if tick is not None and time.monotonic() >= due:
            tick()
            due = time.monotonic() + every
