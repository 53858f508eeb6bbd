"""Stopping the router process on SIGINT or SIGTERM (``python -m router run``).

Python runs a signal handler in the main thread between two bytecodes, so possibly while that thread is inside
``stop.wait`` and holds the event's lock: a handler that called ``stop.set()`` there waited for that lock, held
by its own thread, for ever. So the handler only marks the signal (an attribute store takes no lock) and the main
thread's :func:`wait_for_stop` sets ``stop`` when it sees the mark; it wakes every :data:`SIGNAL_CHECK` seconds,
as a signal the kernel hands to another thread does not interrupt its wait. The controller's commands do the
same (``controller/server/lifecycle.py``): the router imports nothing of the controller.
"""

from __future__ import annotations

import signal
import threading

#: how often the main thread waiting for ``stop`` wakes (a signal is acted on within this)
SIGNAL_CHECK = 0.1


def stop_on_signals(stop: threading.Event) -> None:
    """From now on SIGINT and SIGTERM end :func:`wait_for_stop` on ``stop`` (and set it)."""

    def seen(*_) -> None:
        stop.signalled = True  # no lock: see the module text

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, seen)


def wait_for_stop(stop: threading.Event) -> None:
    """Return once ``stop`` is set, or a signal :func:`stop_on_signals` watches came (``stop`` is set then)."""
    while not stop.wait(SIGNAL_CHECK):
        if getattr(stop, "signalled", False):
            stop.set()
            return
