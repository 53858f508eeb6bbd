"""The Store: TinyDB tables in memory behind one RLock, made durable by a journal.

Reads are dict lookups. Each commit appends one CRC-guarded line to a journal
segment under the lock; the thread then waits for the fsync covering that line
as it lets go of the lock (group commit: concurrent commits share one fsync).
So a write is durable by the time its caller can act on it, and a durable write
costs the same at 1,000 or 50,000 records. When the journal outgrows max(``compact_min_bytes``,
snapshot size) a background thread writes a new snapshot (a TinyDB JSON file)
from a shallow copy and swaps it in by atomic rename; writes go on meanwhile.
Records are immutable once stored: writers replace dicts, never mutate them,
which is what makes the shallow copy consistent.
"""

from __future__ import annotations

import logging
import os
import threading
from contextlib import contextmanager
from types import MappingProxyType
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Mapping

from controller.errors import Unavailable
from controller.store import journal
from controller.store.change_context import ChangeContext
from controller.store.compact import Sharing
from controller.store.journal import StoreCorruptError, StoreError, StoreFormatError, StoreInUseError
from controller.store.locking import StoreLock
from controller.store.snapshots import PART_RECORDS
from controller.store.tables import Change, KeyedTable, KeyedTinyDB, LiveStorage, copy_record

if TYPE_CHECKING:
    from controller.cluster.replication import Replicator

__all__ = [
    "Change",
    "ChangeContext",
    "NotNow",
    "Store",
    "StoreCorruptError",
    "StoreError",
    "StoreFormatError",
    "StoreInUseError",
]

log = logging.getLogger(__name__)
_NO_RECORDS: Mapping[str, dict] = MappingProxyType({})  # stands in for a missing table
Listener = Callable[[list[Change]], None]


class NotNow(Exception):
    """From :meth:`Store.reading_now`: another thread holds the lock, or the call opened a transaction (before it
    changed anything). Nothing was written; run the call where it may wait and write."""


class Store:
    """Tables of JSON records keyed by id; thread-safe, durable and transactional.

    ``path=None`` keeps everything in memory (for tests), with the same API.
    """

    FORMAT_VERSION = journal.FORMAT_VERSION

    def __init__(
        self,
        path: str | os.PathLike | None = None,
        *,
        fsync: bool = True,
        compact_min_bytes: int = journal.COMPACT_MIN_BYTES,
        snapshot_part_records: int = PART_RECORDS,
    ):
        self.lock = StoreLock(self._await_durable)
        self._compacting = threading.Lock()  # one compaction at a time; held by its thread
        self._pending: list[Change] = []
        self._depth = 0
        self._context: ChangeContext | None = None  # of the innermost open transaction
        self._listeners: list[Listener] = []
        #: work listeners scheduled for after the commit (``after_commit``), and whether it is running
        self._after_commit: list[Callable[[], None]] = []
        self._draining = False
        self._closed = False
        self._compact_min = compact_min_bytes
        self._retry_at = 0  # journal size at which to retry after a failed compaction
        self._journal: journal.Journal | None = None
        #: a cluster's raft log (``controller.cluster``): every commit goes through it; None writes locally
        self.replicator: Replicator | None = None
        self._applying = False  # a replicated entry is being applied (by the raft thread, under the lock)
        self._reading_now = False  # the lock's holder is in ``reading_now``: a transaction raises NotNow
        #: in a cluster, what the open transaction read: ``{(table, key): record}`` and unique-index
        #: probes ``{(slot, value): holder}``, the entry's preconditions beside those of its changes
        self._reads: dict | None = None
        self._probes: dict | None = None
        self._unique: dict[str, object] = {}  # slot -> UniqueIndex, for probes checked as entries apply
        tables: dict[str, dict[str, dict]] = {}
        self._sharing = Sharing()  # equal strings of records become one object (see compact)
        if path is not None:
            self._journal, tables = journal.Journal.open(
                path, fsync=fsync, part_records=snapshot_part_records, share=self._sharing.record
            )
        self._storage = LiveStorage(tables, self.transaction, self._stage)
        self.db = KeyedTinyDB(self._storage)
        if self._journal is not None:
            self._compact_on_open()

    # -- reads ---------------------------------------------------------------

    @contextmanager
    def reading_now(self) -> Iterator[None]:
        """Hold the lock for a caller that must not wait for it or for a disk (an event loop): ``NotNow`` at once
        when another thread holds it, and from any ``transaction`` opened inside, before it changes anything."""
        if not self.lock.acquire(blocking=False):
            raise NotNow("the store is busy")
        outer, self._reading_now = self._reading_now, True
        try:
            yield
        finally:
            self._reading_now = outer
            self.lock.release()

    def get(self, table: str, key: str) -> dict | None:
        """The stored record (never mutate it), or None."""
        with self.lock:
            record = self._storage.tables.get(table, _NO_RECORDS).get(key)
            if self._reads is not None and self._depth:  # the transaction's thread (it holds the lock)
                self._reads.setdefault((table, key), record)
            return record

    def note_probe(self, slot: str, value, holder: str | None) -> None:
        """A unique index was asked who holds ``value`` (in a cluster: a precondition of the open transaction)."""
        with self.lock:
            if self._probes is not None and self._depth:
                self._probes.setdefault((slot, value), holder)

    def register_unique(self, slot: str, index) -> None:
        """A unique index under a name that is the same on every member (its table and where its key is made)."""
        with self.lock:
            self._unique.setdefault(slot, index)

    def unique_holder(self, slot: str, value) -> str | None | bool:
        """Who holds ``value`` in the unique index ``slot`` now (False: no such index here)."""
        index = self._unique.get(slot)
        return False if index is None else index.holder(value)

    def all(self, table: str) -> list[dict]:
        """A list of the table's records, safe to iterate while others write."""
        with self.lock:
            return list(self._storage.tables.get(table, _NO_RECORDS).values())

    def values(self, table: str) -> Iterable[dict]:
        """A live view of the records, for callers that hold ``lock``."""
        return self._storage.tables.get(table, _NO_RECORDS).values()

    def uncommitted(self) -> list[Change]:
        """The changes of the open transaction, oldest first, for callers that hold ``lock``."""
        return list(self._pending)

    def count(self, table: str) -> int:
        with self.lock:
            return len(self._storage.tables.get(table, _NO_RECORDS))

    def tables(self) -> list[str]:
        """Names of the tables holding at least one record, sorted."""
        with self.lock:
            return sorted(self._storage.tables)

    @property
    def fsyncs(self) -> int:
        """Journal fsyncs so far (0 in memory): each covers every commit written before it began."""
        return self._journal.fsyncs if self._journal is not None else 0

    def table(self, name: str) -> KeyedTable:
        """The TinyDB table, for stock queries (``search(Query().name == 'x')``); hold ``lock``."""
        return self.db.table(name)

    # -- writes --------------------------------------------------------------

    def insert(self, table: str, key: str, record: dict) -> None:
        """Store a new record; KeyError if ``key`` exists."""
        key, doc = self._sharing.record(key, _checked(table, key, record))
        with self.transaction():
            if key in self._storage.tables.get(table, _NO_RECORDS):
                raise KeyError(f"{table}/{key} already exists")
            self.db.table(table).put_doc(key, doc)

    def put(self, table: str, key: str, record: dict) -> None:
        """Insert or replace the whole record."""
        key, doc = self._sharing.record(key, _checked(table, key, record))
        with self.transaction():
            self.db.table(table).put_doc(key, doc)

    def delete(self, table: str, key: str) -> dict | None:
        """Remove a record; returns it, or None if there was none."""
        _checked(table, key, {})
        with self.transaction():
            change = self.db.table(table).remove_doc(key)
        return change.old if change is not None else None

    @contextmanager
    def transaction(self, context: ChangeContext | None = None) -> Iterator[None]:
        """Group the writes inside into one atomic, durable commit.

        Nestable: only the outermost commits. An exception leaving any level
        undoes that level's changes (so an inner one caught by the caller is a
        savepoint). Raises Unavailable, with everything undone, if the commit
        cannot be written. Each change inside carries ``context``, or without
        one the enclosing transaction's.
        """
        with self.lock:
            if self._closed:
                raise Unavailable(message="The data store is closed")
            if self._reading_now:
                raise NotNow("a write")
            mark, outer = len(self._pending), self._context
            if self._depth == 0 and self.replicator is not None and not self._applying:
                self._reads, self._probes = {}, {}
            self._depth += 1
            if context is not None:
                self._context = context
            try:
                yield
            except BaseException:
                self._undo(self._pending[mark:])
                del self._pending[mark:]
                raise
            finally:
                self._depth -= 1
                self._context = outer
                if self._depth == 0:
                    reads, probes, self._reads, self._probes = self._reads, self._probes, None, None
            if self._depth == 0:
                self._commit(reads, probes)

    def add_listener(self, fn: Listener) -> None:
        """Call ``fn(changes)`` after each successful commit, still under the lock.

        A listener that raises is logged and skipped: the commit is durable by then.
        """
        with self.lock:
            self._listeners.append(fn)

    def after_commit(self, fn: Callable[[], None]) -> None:
        """Run ``fn()`` once every listener of the current commit has run, still under the lock.

        A listener must not write (the store is mid-notification); it schedules the write
        here instead, and ``fn``'s writes are a transaction of their own (with their own
        listeners, which may schedule more). Scheduling the same ``fn`` twice runs it once.
        """
        with self.lock:
            if fn not in self._after_commit:
                self._after_commit.append(fn)

    def _run_after_commit(self) -> None:
        if self._draining or self._applying:  # a replicated entry's work runs on its writer's thread
            return  # a commit made by scheduled work: the loop below picks up what it schedules
        self._draining = True
        try:
            while self._after_commit:
                fn = self._after_commit.pop(0)
                try:
                    fn()
                except Exception:
                    log.exception("store: after-commit work %r failed", fn)
        finally:
            self._draining = False

    def _stage(self, change: Change) -> None:
        """Add a change to the open transaction, stamped with its context."""
        if self._context is not None:  # a constructor call: cheaper than dataclasses.replace
            change = Change(change.table, change.key, change.old, change.new, self._context)
        self._pending.append(change)

    def _commit(self, reads: dict | None = None, probes: dict | None = None) -> None:
        changes = self._pending[:]
        self._pending.clear()
        if not changes:
            return
        if self.replicator is not None and not self._applying:
            self._replicate(changes, reads or {}, probes or {})
            return
        if self._journal is not None:
            try:
                self.lock.ticket = self._journal.write(journal.encode_entry(changes))
            except BaseException as ex:
                self._undo(changes)  # memory must match the journal, whatever went wrong
                if not isinstance(ex, OSError):
                    raise
                log.error("store: commit of %d changes failed and was undone: %s", len(changes), ex)
                raise Unavailable() from ex
        for fn in list(self._listeners):
            try:
                fn(changes)
            except Exception:
                log.exception("store: listener %r failed", fn)
        self._run_after_commit()
        self._maybe_compact()

    # -- a cluster's write path (``controller.cluster.replication``) ----------

    def _replicate(self, changes: list[Change], reads: dict, probes: dict) -> None:
        """A commit in a cluster: undone here, then made through the raft log.

        The replicator lets go of the lock while it waits until the entry was applied
        here by ``apply_replicated``, as on every member (what the transaction read
        and probed are preconditions checked then), and hands back the work the
        listeners scheduled, which runs on this thread as after a local commit.
        """
        self._undo(changes)
        work = self.replicator.replicate(changes, reads, probes)
        for fn in work:
            if fn not in self._after_commit:
                self._after_commit.append(fn)
        self._run_after_commit()

    def apply_replicated(
        self, changes: list[Change], meta: tuple[str, str, dict]
    ) -> tuple[list[Callable[[], None]], int]:
        """Apply one committed entry's changes as one local commit (raft thread).

        The caller has checked the entry's preconditions under ``lock``. ``meta`` is a
        record written in the same commit (the applied raft index). Returns the work
        the listeners scheduled (``after_commit``), for the entry's writer to run, and the
        journal position the writer waits for (``await_durable``) before it answers: the
        raft thread does not wait for each entry's fsync, so one fsync covers many.
        """
        self._applying = True
        saved, self._after_commit = self._after_commit, []  # a writer's own work not yet run stays its own
        try:
            with self.transaction():
                for change in changes:
                    self._context = change.context
                    if change.new is None:
                        self.db.table(change.table).remove_doc(change.key)
                    else:
                        key, doc = self._sharing.record(change.key, change.new)
                        self.db.table(change.table).put_doc(key, doc)
                self._context = None
                table, key, record = meta
                self.db.table(table).put_doc(key, record)
        finally:
            self._applying = False
            work, self._after_commit = self._after_commit, saved
        return work, self.lock.take_ticket()

    def await_durable(self, ticket: int) -> None:
        """Wait until the journal position ``ticket`` is on disk (0: nothing to wait for)."""
        if ticket and self._journal is not None:
            self._await_durable(ticket)

    def load_replicated(self, tables: dict[str, dict[str, dict]]) -> None:
        """Make the store hold exactly ``tables`` (a raft snapshot from the leader), as one commit."""
        self._applying = True
        saved, self._after_commit = self._after_commit, []
        try:
            with self.transaction():
                self._storage.write(tables)
        finally:
            self._applying = False
            self._after_commit = saved  # the snapshot's writers ran their work where they wrote

    def export_tables(self) -> dict[str, dict[str, dict]]:
        """A consistent shallow copy of every table (records are immutable), for a raft snapshot."""
        with self.lock:
            return self._shallow_copy()

    def _await_durable(self, ticket: int) -> None:
        """Called as a thread lets go of the lock: wait for the fsync covering its commits."""
        try:
            self._journal.sync(ticket)
        except OSError as ex:
            raise Unavailable() from ex

    def _undo(self, changes: list[Change]) -> None:
        for change in reversed(changes):
            self._storage.revert(change)

    # -- compaction and copies -----------------------------------------------

    def compact(self) -> None:
        """Write a snapshot covering every commit so far, now; drop the journal it covers."""
        if self._journal is None:
            return
        with self._compacting:
            with self.lock:
                self._require_idle("compact")
                upto, tables = self._begin_compaction()
            try:
                self._finish_compaction(upto, tables)
            except OSError as ex:
                raise Unavailable() from ex

    def snapshot_to(self, dest: str | os.PathLike) -> None:
        """Write a consistent copy of the store into the new or empty folder ``dest``."""
        with self.lock:
            self._require_idle("snapshot_to")
            tables = self._shallow_copy()
        journal.write_copy(dest, tables, fsync=self._journal is None or self._journal.fsync)

    def _needs_compaction(self) -> bool:
        pending = self._journal.pending_bytes
        return pending > max(self._compact_min, self._journal.snapshot_bytes, self._retry_at)

    def _maybe_compact(self) -> None:
        """After a commit: start a background compaction if the journal is due one."""
        if self._journal is None or not self._needs_compaction():
            return
        self._start_compaction(self._begin_compaction)

    def _start_compaction(self, begin: Callable[[], tuple[int, dict]]) -> None:
        """Run ``begin()`` (upto, tables) and write that snapshot in a background thread."""
        if not self._compacting.acquire(blocking=False):
            return  # one is running already
        try:
            upto, tables = begin()
            threading.Thread(
                target=self._compact_in_background, args=(upto, tables), name="store-compaction", daemon=True
            ).start()
        except Exception:  # the commit is durable: a compaction that cannot start is retried later
            self._compacting.release()
            log.exception("store: cannot start a compaction")

    def _compact_in_background(self, upto: int, tables: dict) -> None:
        try:
            self._finish_compaction(upto, tables)
        except OSError as ex:
            log.error("store: compaction failed, the journal keeps every commit: %s", ex)
        except Exception:
            log.exception("store: compaction failed; the journal keeps every commit")
        finally:
            self._compacting.release()

    def _compact_on_open(self) -> None:
        """In the background, so start-up never waits for a snapshot: finish the one an
        earlier run left half-written, or start one if the journal is due."""
        resume, self._journal.resume = self._journal.resume, None
        if resume is not None:
            self._start_compaction(lambda: resume)
        elif self._needs_compaction():
            with self.lock:
                self._start_compaction(self._begin_compaction)

    def _begin_compaction(self) -> tuple[int, dict]:
        """Under the lock, at a commit boundary: cut the journal and copy the tables."""
        return self._journal.rotate(), self._shallow_copy()

    def _finish_compaction(self, upto: int, tables: dict) -> None:
        """Outside the lock: write the snapshot, then retire what it covers."""
        try:
            size = self._journal.write_snapshot(upto, tables)
        except OSError:
            self._retry_at = self._journal.pending_bytes + self._compact_min
            self._journal.discard_parts(upto)  # a full disk gets its space back
            raise
        self._journal.retire(upto, size)
        self._retry_at = 0

    def _shallow_copy(self) -> dict[str, dict[str, dict]]:
        # O(n) dict copies of shared, immutable records: fast, unlike serialising them.
        return {name: dict(docs) for name, docs in self._storage.tables.items()}

    def _require_idle(self, what: str) -> None:
        if self._closed:
            raise Unavailable(message="The data store is closed")
        if self._depth:
            raise RuntimeError(f"{what} cannot run inside a transaction")

    # -- lifecycle -----------------------------------------------------------

    def close(self) -> None:
        """Wait for a running compaction, then release the folder."""
        with self._compacting:
            with self.lock:
                if self._closed:
                    return
                self._require_idle("close")
                self._closed = True
                if self._journal is not None:
                    self._journal.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def _checked(table: str, key: str, record: Mapping) -> dict:
    if not isinstance(table, str) or not table:
        raise TypeError("a table name must be a non-empty str")
    if not isinstance(key, str):
        raise TypeError(f"a key must be a str, not {type(key).__name__}")
    return copy_record(record)
