"""The store's lock: a re-entrant lock that ends each thread's hold with group commit.

A commit writes its journal line under the lock but does not fsync it there;
the thread records its ticket instead. When the thread lets go of the lock for
the last time (its outermost ``with store.lock`` or transaction ends), it waits
for the fsync covering its ticket. Meanwhile other threads take the lock and
append their own lines, so one fsync covers many commits: more connections
mean more durable writes per second, and no caller can act on (or reply about)
a write before it is on disk.
"""
from __future__ import annotations

import threading
from typing import Callable


class StoreLock:
    """An RLock whose outermost release calls ``on_release(ticket)`` if a commit is pending."""

    def __init__(self, on_release: Callable[[int], None]):
        self._lock = threading.RLock()
        self._local = threading.local()
        self._on_release = on_release

    @property
    def ticket(self) -> int:
        return getattr(self._local, "ticket", 0)

    @ticket.setter
    def ticket(self, value: int) -> None:
        """Set by a commit, under the lock: the journal position to wait for."""
        self._local.ticket = value

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if not self._lock.acquire(blocking, timeout):
            return False
        self._local.depth = getattr(self._local, "depth", 0) + 1
        return True

    def release(self) -> None:
        local = self._local
        local.depth -= 1
        self._lock.release()
        if local.depth == 0 and getattr(local, "ticket", 0):
            ticket, local.ticket = local.ticket, 0
            self._on_release(ticket)

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc_info) -> None:
        self.release()
