"""Every store write through a raft log (PySyncObj): the Store's one write path, replicated.

A member's ``Store`` hands each commit to ``Replicator.replicate`` instead of its
journal (``Store._commit``). The changes are undone locally and sent as one raft
entry (to the leader, wherever the write was made); the writer keeps the store
lock while the entry is committed (one write in flight per member, so writes on
one member never conflict), and applies what the raft thread hands it meanwhile. Every member, the writer too, applies committed
entries in log order on its raft thread (``_apply``): under the store lock it
checks the entry's preconditions (each changed record still as the writer saw
it) and applies the changes as one local, durable commit with the entry's raft
index (table ``raftState``), or applies nothing when a write made meanwhile
elsewhere changed one of those records. The writer returns once its member has
applied the entry: committed on a majority, durable in its own store, visible
to its next read. A write whose outcome is unknown (leader lost mid-way) is
sent again under the same id: the preconditions make a second copy a no-op.

Entries already in a member's store (its ``raftState`` index) are skipped when
the raft journal is replayed at start. Raft snapshots (PySyncObj's full dump)
carry the store's tables, so a member far behind, or new, loads them and
replays the rest of the log.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import struct
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import orjson
from pysyncobj import FAIL_REASON, SyncObj, SyncObjConf, replicated
from pysyncobj import pickle as raft_pickle

from controller.cluster.settings import RaftSettings
from controller.errors import ClusterNoLeader, ReplicaConflict
from controller.store.change_context import ChangeContext
from controller.store.tables import Change

log = logging.getLogger(__name__)

#: the table holding this member's applied raft index (``{"id": "applied", "index": n}``)
STATE_TABLE = "raftState"
APPLIED = "applied"
#: failures after which the same entry is sent again (the outcome is unknown or it never left)
_RETRY = frozenset(
    {
        FAIL_REASON.QUEUE_FULL,
        FAIL_REASON.MISSING_LEADER,
        FAIL_REASON.DISCARDED,
        FAIL_REASON.NOT_LEADER,
        FAIL_REASON.LEADER_CHANGED,
        FAIL_REASON.UNKNOWN_OUTCOME,
    }
)
_RECENT = 4096  # entry ids this member remembers having applied (for a writer's resends)


def digest(record: dict | None) -> str | None:
    """What a writer saw of a record: None for no record, else a hash of its canonical JSON."""
    if record is None:
        return None
    return hashlib.blake2b(orjson.dumps(record, option=orjson.OPT_SORT_KEYS), digest_size=12).hexdigest()


def encode(entry_id: str, changes: list[Change]) -> bytes:
    context = changes[0].context
    ctx = None
    if context is not None:
        ctx = [context.source_type, context.method, context.path, context.request_id, context.remote_addr]
    ops = [[c.table, c.key, digest(c.old), c.new, i if c.context is not context else -1] for i, c in enumerate(changes)]
    return orjson.dumps({"id": entry_id, "ctx": ctx, "ops": ops})


def _unchanged_since_written(store, ops: list) -> bool:
    """Whether every record is as its writer saw it: in the entry's order, so that a record one entry writes twice
    (created, then updated in the same write) is checked against what the entry's earlier op left."""
    written: dict = {}
    for table, key, seen, new, _i in ops:
        current = written[(table, key)] if (table, key) in written else store.get(table, key)
        if digest(current) != seen:
            return False
        written[(table, key)] = new
    return True


@dataclass
class _Waiter:
    handoff: threading.Condition
    event: threading.Event = field(default_factory=threading.Event)
    applied: bool | None = None  # True: applied, False: refused (a conflicting write came first)
    work: list = field(default_factory=list)
    ticket: int = 0  # the journal position of the applied entry, made durable by the writer
    error: int | None = None

    def set(self) -> None:
        self.event.set()
        with self.handoff:
            self.handoff.notify_all()

    def on_result(self, _result, error) -> None:
        if error != FAIL_REASON.SUCCESS:
            self.error = error
            self.set()


@dataclass
class _Handed:
    """Work of the raft thread (an entry to apply, a snapshot) handed to the writer holding the store lock."""

    run: Callable[[], None]
    done: threading.Event = field(default_factory=threading.Event)


class _Raft(SyncObj):
    """The PySyncObj object: one replicated method, the store entry."""

    def __init__(self, self_address: str, partners: list[str], conf: SyncObjConf, apply: Callable[[bytes, int], None]):
        self._apply_entry = apply
        super().__init__(self_address, partners, conf)

    @replicated
    def store_entry(self, entry: bytes) -> None:
        self._apply_entry(entry, self.raftLastApplied + 1)


class Replicator:
    """One member's raft side: sends its store's commits, applies everyone's."""

    def __init__(
        self,
        store,
        folder: Path,
        self_address: str,
        partners: list[str],
        *,
        member_id: str,
        settings: RaftSettings | None = None,
        on_state: Callable[[], None] | None = None,
        password: str | None = None,
    ):
        self.store = store
        self.member_id = member_id
        self.settings = settings or RaftSettings()
        self.address = self_address
        self._seq = itertools.count(1)
        self._waiting: dict[str, _Waiter] = {}
        self._recent: OrderedDict[str, bool] = OrderedDict()
        self._handoff = threading.Condition()
        self._handed: list[_Handed] = []
        meta = store.get(STATE_TABLE, APPLIED)
        self.applied_index = meta["index"] if meta else 0
        self._on_state = on_state
        folder.mkdir(parents=True, exist_ok=True)
        conf = self.settings.conf(
            folder, serializer=self._dump, deserializer=self._load, onStateChanged=self._state_changed
        )
        store.replicator = self
        self.raft: _Raft | None = None
        self.raft = _Raft(self_address, partners, conf, self._apply)

    # -- the writer's side ---------------------------------------------------

    def replicate(self, changes: list[Change]) -> list[Callable[[], None]]:
        """Commit ``changes`` through the log; the caller holds the store lock and keeps it.

        Holding it, no other thread of this member computes a write from a state this one is
        about to change (so writes on one member never conflict); the raft thread hands the
        entries it must apply meanwhile to this thread (``_run_handed``), in log order.
        """
        entry_id = f"{self.member_id}:{next(self._seq)}"
        payload = encode(entry_id, changes)
        waiter = _Waiter(self._handoff)
        self._waiting[entry_id] = waiter
        deadline = time.monotonic() + self.settings.write_timeout
        try:
            while True:
                waiter.error = None
                waiter.event.clear()
                if self._recent.get(entry_id) is None:
                    self.raft.store_entry(payload, callback=waiter.on_result)
                self._run_handed(waiter, deadline)
                if waiter.applied is not None:
                    break
                if time.monotonic() >= deadline or (waiter.error is not None and waiter.error not in _RETRY):
                    raise ClusterNoLeader(cause={"reason": _reason(waiter.error)})
                self._run_handed(None, min(time.monotonic() + 0.05, deadline))  # an election is under way
        finally:
            self._waiting.pop(entry_id, None)
        if waiter.ticket:  # durable in this member's store before the answer: as the lock is let go
            self.store.lock.ticket = max(waiter.ticket, self.store.lock.ticket)
        if not waiter.applied:
            raise ReplicaConflict(message="a concurrent write on another cluster member changed the same record; retry")
        return waiter.work

    def _run_handed(self, waiter: _Waiter | None, until: float) -> None:
        """Until ``waiter`` is done (or ``until``): apply the entries the raft thread hands over."""
        while waiter is None or not waiter.event.is_set():
            left = until - time.monotonic()
            if left <= 0:
                return
            with self._handoff:
                if not self._handed and (waiter is None or not waiter.event.is_set()):
                    self._handoff.wait(min(left, 0.05))
                items, self._handed = self._handed, []
            for item in items:
                try:
                    item.run()
                finally:
                    item.done.set()

    # -- every member: apply committed entries in order (raft thread) ---------

    def _apply(self, payload: bytes, index: int) -> None:
        self._under_store_lock(lambda: self._apply_locked(payload, index))

    def _under_store_lock(self, run: Callable[[], None]) -> None:
        """On the raft thread: ``run()`` under the store lock, or by the waiting writer that holds it."""
        lock = self.store.lock
        if lock.acquire(blocking=False):
            try:
                run()
            finally:
                lock.release()
            return
        item = _Handed(run)
        with self._handoff:
            self._handed.append(item)
            self._handoff.notify_all()
        while not item.done.wait(0.002):
            if lock.acquire(blocking=False):  # held by a reader, not a waiting writer: run it here
                try:
                    with self._handoff:
                        mine = item in self._handed
                        if mine:
                            self._handed.remove(item)
                    if mine:
                        try:
                            run()
                        finally:
                            item.done.set()
                finally:
                    lock.release()

    def _apply_locked(self, payload: bytes, index: int) -> None:
        store = self.store
        with store.lock:
            if index <= self.applied_index:
                return  # already in this member's store (a journal replayed at start)
            entry = orjson.loads(payload)
            ops = entry["ops"]
            ok = _unchanged_since_written(store, ops)
            changes = []
            if ok:
                ctx = ChangeContext(*entry["ctx"]) if entry["ctx"] else None
                changes = [Change(table, key, None, new, ctx if i >= 0 else None) for table, key, _s, new, i in ops]
            work, ticket = store.apply_replicated(changes, (STATE_TABLE, APPLIED, {"id": APPLIED, "index": index}))
            self.applied_index = index
            entry_id = entry["id"]
            if entry_id.startswith(self.member_id + ":"):
                self._recent[entry_id] = ok
                if len(self._recent) > _RECENT:
                    self._recent.popitem(last=False)
            waiter = self._waiting.get(entry_id)
            if waiter is not None and waiter.applied is None:
                waiter.applied, waiter.work, waiter.ticket = ok, work, ticket
                waiter.set()

    # -- snapshots (PySyncObj's full dump) -----------------------------------

    def _dump(self, filename: str, raft_data) -> None:
        """Called on the raft thread: the store's tables at the applied index, and PySyncObj's own data."""
        head = raft_pickle.dumps(raft_data)
        copied: list = []
        self._under_store_lock(lambda: copied.append((self.applied_index, self.store.export_tables())))
        tables = orjson.dumps({"index": copied[0][0], "tables": copied[0][1]})
        with open(filename, "wb") as out:
            out.write(struct.pack(">Q", len(head)))
            out.write(head)
            out.write(tables)

    def _load(self, filename: str):
        with open(filename, "rb") as src:
            data = src.read()
        (size,) = struct.unpack(">Q", data[:8])
        raft_data = raft_pickle.loads(data[8 : 8 + size])
        body = orjson.loads(data[8 + size :])

        def take() -> None:
            if body["index"] > self.applied_index:  # behind the snapshot: take it (a member's own is never ahead)
                self.store.load_replicated(body["tables"])
                self.applied_index = body["index"]

        self._under_store_lock(take)
        return raft_data

    # -- status --------------------------------------------------------------

    def _state_changed(self, old, new) -> None:
        if self._on_state is not None:
            try:
                self._on_state()
            except Exception:
                log.exception("cluster: state listener failed")

    @property
    def is_leader(self) -> bool:
        return self.raft._isLeader()

    @property
    def leader(self) -> str | None:
        leader = self.raft._getLeader()
        return leader.id if leader is not None else None

    def has_quorum(self) -> bool:
        return bool(self.raft.hasQuorum)

    def status(self) -> dict:
        return self.raft.getStatus()

    def close(self) -> None:
        self.store.replicator = None
        self.raft.destroy()
        thread = getattr(self.raft, "_SyncObj__thread", None)
        if thread is not None and thread is not threading.current_thread():
            thread.join(5)


def _reason(error: int | None) -> str:
    names = {value: name for name, value in vars(FAIL_REASON).items() if name.isupper()}
    return "no commit in time" if error is None else names.get(error, str(error)).lower().replace("_", " ")
