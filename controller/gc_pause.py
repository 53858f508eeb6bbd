"""Pausing Python's cyclic garbage collector around bulk work.

Building hundreds of thousands of records (loading a store, importing a network,
rebuilding the policy engine) allocates millions of containers, and each one
counts towards the next collection: the collector then walks the whole heap again
and again, which more than doubles the work. Records and indexes hold no
reference cycles, so nothing is lost by collecting once afterwards instead.

The pause is process-wide; nested and concurrent pauses are counted, and the
collector resumes (if it was running) when the last one ends.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

_lock = threading.Lock()
_depth = 0
_resume = False  # whether the collector ran when the first pause began


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run the body with the cyclic collector off (reference counting goes on)."""
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _resume:
                gc.enable()
