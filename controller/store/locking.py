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
from contextlib import contextmanager
from threading import get_ident
from typing import Callable, Iterator


class StoreLock:
    """An RLock whose outermost release calls ``on_release(ticket)`` if a commit is pending.

    Reads stay cheap: a release costs one dict check unless some thread has a
    commit awaiting its fsync.
    """

    def __init__(self, on_release: Callable[[int], None]):
        self._lock = threading.RLock()
        self._tickets: dict[int, int] = {}  # thread id -> journal position its commits need on disk
        self._on_release = on_release

    @property
    def ticket(self) -> int:
        return self._tickets.get(get_ident(), 0)

    @ticket.setter
    def ticket(self, value: int) -> None:
        """Set by a commit, under the lock: the journal position to wait for."""
        self._tickets[get_ident()] = value

    def take_ticket(self) -> int:
        """This thread's pending journal position, which it will no longer wait for (its caller does)."""
        return self._tickets.pop(get_ident(), 0)

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:
        self._lock.release()
        if self._tickets and not self._lock._is_owned():  # NOTE: the C RLock's own ownership test
            ticket = self._tickets.pop(get_ident(), 0)
            if ticket:
                self._on_release(ticket)

    @contextmanager
    def suspended(self) -> Iterator[None]:
        """Let go of every level this thread holds, then take them all back (a cluster write's wait)."""
        state = self._lock._release_save()  # NOTE: the C RLock's own primitives, as threading.Condition uses
        try:
            yield
        finally:
            self._lock._acquire_restore(state)

    def __enter__(self) -> bool:
        return self._lock.acquire()

    def __exit__(self, *exc_info) -> None:
        self.release()
