"""Memory the controller gives back after many clients leave.

A connection's memory is freed when it closes (``controller.server.http_connection``), but freed is not returned:
glibc's allocator keeps the pages of its heaps for reuse, and gives back only a free stretch at a heap's very top.
TLS state (OpenSSL's buffers and objects, allocated by glibc, not by Python) is spread between what stays, so after
10,000 SDKs went the process keeps its peak size. ``malloc_trim(0)`` walks the heaps and returns every free page
to the system (``madvise``), wherever it lies. It takes the allocator's locks while it walks (milliseconds to tens
of milliseconds for a heap of hundreds of MB), so it runs on its own thread, and only after a large drop: when the
open connections fell to half their highest since the last trim, by :data:`TRIM_AFTER_DROP` at least. On a C library without
it (musl, macOS) nothing is done.

The serving process also allocates from at most :data:`ARENAS` glibc arenas (``limit_arenas``, at start, before any
thread): by default glibc gives threads up to eight arenas per core, and the TLS and HTTP objects of the loop thread,
the workers and the writer threads spread over them; each keeps its own free pages and its own high-water mark.
A fleet of 2,000 SDKs measured 3-4 KB less RSS per SDK with two (``python -m benchmarks.fleet``). An explicit
``MALLOC_ARENA_MAX`` in the environment is left as it is.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import threading

log = logging.getLogger("controller.server.memory")

#: at least this many fewer open connections than the highest count since the last trim, and at most half of it:
#: give the freed memory back (half: a large fleet's churn does not trim over and over)
TRIM_AFTER_DROP = 100


#: glibc arenas of a serving controller (``mallopt(M_ARENA_MAX)``)
ARENAS = 2
_M_ARENA_MAX = -8  # glibc's malloc.h


def _libc_function(name: str):
    try:
        return getattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), name)
    except (OSError, AttributeError):
        return None


def limit_arenas(arenas: int = ARENAS, *, environ=os.environ, mallopt=None) -> bool:
    """Allocate from at most ``arenas`` glibc arenas from now on; False where not applied (an explicit
    ``MALLOC_ARENA_MAX``, or a C library without ``mallopt``). Call before the serving threads start."""
    if "MALLOC_ARENA_MAX" in environ:
        return False
    mallopt = mallopt or _libc_function("mallopt")
    if mallopt is None:
        return False
    return bool(mallopt(_M_ARENA_MAX, arenas))


def _malloc_trim():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_TRIM = _malloc_trim()


def trim_heap() -> bool:
    """Return the heaps' free pages to the system now; False where the C library cannot."""
    if _TRIM is None:
        return False
    _TRIM(0)
    return True


class HeapTrimmer:
    """Watches the open connection count (``opened`` on accept, ``observe`` from the server's sweep) and trims after a
    large drop."""

    def __init__(self, drop: int = TRIM_AFTER_DROP, trim=trim_heap):
        self.drop, self.trim = drop, trim
        self.highest = 0
        self.trims = 0

    def opened(self, open_now: int) -> None:
        """A connection was accepted (the highest count is seen even between sweeps)."""
        if open_now > self.highest:
            self.highest = open_now

    def observe(self, open_now: int) -> bool:
        """From the sweep: True when a trim was started for this drop."""
        if open_now > self.highest:
            self.highest = open_now
            return False
        if self.highest - open_now < max(self.drop, self.highest // 2):
            return False
        self.highest = open_now
        self.trims += 1
        threading.Thread(target=self.trim, name="heap-trim", daemon=True).start()
        return True
