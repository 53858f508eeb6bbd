"""Every store write through a raft log (PySyncObj): the Store's one write path, replicated.

A member's ``Store`` hands each commit to ``Replicator.replicate`` instead of its
journal (``Store._commit``). The changes are undone locally and sent (to the leader,
wherever the write was made) with their preconditions: each changed record as the
writer saw it, each record the transaction read, each unique-index answer it got.
The writer lets go of the store lock while it waits; commits made on its member
while its entry is in flight go together as the next entry (group commit). Every
member, the writer too, applies committed entries in log order on its raft thread
(``_apply``): under the store lock it checks each commit's preconditions and
applies its changes as one local, durable commit with the entry's raft index
(table ``raftState``), or applies nothing when a commit ordered before it changed
what it saw. The writer returns once its member has applied its commit: committed
on a majority, durable in its own store, visible to its next read. A commit whose
outcome is unknown (leader lost mid-way) is sent again under the same id: the
preconditions make a second copy a no-op.

Entries already in a member's store (its ``raftState`` index, and how many commits of
that entry) are skipped when the raft journal is replayed at start. Raft snapshots
(PySyncObj's full dump) carry the store's tables, so a member far behind, or new,
loads them and replays the rest of the log.
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
from pysyncobj.tcp_connection import CONNECTION_STATE
from pysyncobj.transport import TCPTransport

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
_ALL = 1 << 30  # every commit of an entry applied
_STUCK = 1.0  # an entry in flight this long without an answer: the queue is sent anyway


def digest(record: dict | None) -> str | None:
    """What a writer saw of a record: None for no record, else a hash of its canonical JSON."""
    if record is None:
        return None
    return hashlib.blake2b(orjson.dumps(record, option=orjson.OPT_SORT_KEYS), digest_size=12).hexdigest()


def encode(entry_id: str, changes: list[Change], reads: dict | None = None, probes: dict | None = None) -> dict:
    """One commit as part of a raft entry: its changes, and what it read and probed (preconditions)."""
    context = changes[0].context
    ctx = None
    if context is not None:
        ctx = [context.source_type, context.method, context.path, context.request_id, context.remote_addr]
    ops = [[c.table, c.key, digest(c.old), c.new, i if c.context is not context else -1] for i, c in enumerate(changes)]
    sub: dict = {"id": entry_id, "ctx": ctx, "ops": ops}
    if reads:
        written = {(c.table, c.key) for c in changes}
        seen = [[table, key, digest(record)] for (table, key), record in reads.items() if (table, key) not in written]
        if seen:
            sub["reads"] = seen
    if probes:
        sub["probes"] = [[slot, value, holder] for (slot, value), holder in probes.items()]
    return sub


def _hashable(value):
    """A probed value back from JSON (tuples came as lists)."""
    return tuple(_hashable(v) for v in value) if isinstance(value, list) else value


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
    event: threading.Event = field(default_factory=threading.Event)
    applied: bool | None = None  # True: applied, False: refused (a conflicting write came first)
    work: list = field(default_factory=list)
    ticket: int = 0  # the journal position of the applied entry, made durable by the writer
    error: int | None = None


class _Transport(TCPTransport):
    """PySyncObj's TCP transport with a fault switch: raft traffic with the members in ``cut_off`` stops.

    Messages to and from them are dropped, connections with them are closed (on the raft
    thread's next tick) and refused, as a network partition would; clearing the set heals it.
    """

    def _cut(self, node) -> bool:
        return node is not None and getattr(node, "id", None) in self._syncObj.cut_off

    def _onTick(self):
        if self._syncObj.cut_off:
            for node, conn in list(self._connections.items()):
                if self._cut(node) and conn.state != CONNECTION_STATE.DISCONNECTED:
                    conn.disconnect()
        super()._onTick()

    def _shouldConnect(self, node):
        return not self._cut(node) and super()._shouldConnect(node)

    def _onNodeConnected(self, node):
        if self._cut(node):
            conn = self._connections.get(node)
            if conn is not None:
                conn.disconnect()
            return
        super()._onNodeConnected(node)

    def _onMessageReceived(self, node, message):
        if not self._cut(node):
            super()._onMessageReceived(node, message)

    def send(self, node, message):
        if self._cut(node):
            return False
        return super().send(node, message)


class _Raft(SyncObj):
    """The PySyncObj object: one replicated method, the store entry."""

    def __init__(self, self_address: str, partners: list[str], conf: SyncObjConf, apply: Callable[[bytes, int], None]):
        self._apply_entry = apply
        #: raft addresses of the members this one is cut off from (a simulated partition)
        self.cut_off: frozenset[str] = frozenset()
        super().__init__(self_address, partners, conf, transportClass=_Transport)

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
        # group commit: commits made while this member's entry is in flight wait here and go as the next one
        self._sending = threading.Lock()
        self._queue: list[tuple[dict, _Waiter]] = []
        self._in_flight = 0.0  # when the entry in flight was sent (0: none)
        meta = store.get(STATE_TABLE, APPLIED)
        self.applied_index = meta["index"] if meta else 0
        #: how many commits of the entry at ``applied_index`` are in the store (all but after a crash mid-entry)
        self.applied_parts = meta.get("parts", _ALL) if meta else _ALL
        self._on_state = on_state
        folder.mkdir(parents=True, exist_ok=True)
        conf = self.settings.conf(
            folder, serializer=self._dump, deserializer=self._load, onStateChanged=self._state_changed
        )
        conf.bindAddress = conf.bindAddress or self_address  # its own address only (PySyncObj: every interface)
        store.replicator = self
        self.raft: _Raft | None = None
        self.raft = _Raft(self_address, partners, conf, self._apply)

    # -- the writer's side ---------------------------------------------------

    def replicate(self, changes: list[Change], reads: dict | None = None, probes: dict | None = None) -> list:
        """Commit ``changes`` through the log; the caller holds the store lock, let go of while it waits.

        Other threads of this member go on meanwhile (their commits join the next entry);
        what this transaction read and probed are checked as the entry applies, so a
        commit computed from a state another commit changed first is refused
        (``ReplicaConflict``: the API runs the request again), on every member alike.
        """
        entry_id = f"{self.member_id}:{next(self._seq)}"
        sub = encode(entry_id, changes, reads, probes)
        waiter = _Waiter()
        self._waiting[entry_id] = waiter
        deadline = time.monotonic() + self.settings.write_timeout
        try:
            with self.store.lock.suspended():
                while True:
                    waiter.error = None
                    waiter.event.clear()
                    if self._recent.get(entry_id) is None and waiter.applied is None:
                        self._submit(sub, waiter)
                    while not waiter.event.wait(min(_STUCK, max(0.0, deadline - time.monotonic()))):
                        if time.monotonic() >= deadline:
                            break
                        self._kick()  # an entry in flight that never got an answer: send the queue anyway
                    if waiter.applied is not None:
                        break
                    if time.monotonic() >= deadline or (waiter.error is not None and waiter.error not in _RETRY):
                        raise ClusterNoLeader(cause={"reason": _reason(waiter.error)})
                    time.sleep(0.05)  # an election is under way
        finally:
            self._waiting.pop(entry_id, None)
        if waiter.ticket:  # durable in this member's store before the answer: as the lock is let go
            self.store.lock.ticket = max(waiter.ticket, self.store.lock.ticket)
        if not waiter.applied:
            raise ReplicaConflict(message="a concurrent write on another cluster member changed the same record; retry")
        return waiter.work

    def _submit(self, sub: dict, waiter: _Waiter) -> None:
        """Queue a commit; send it now unless this member's entry is in flight (then it goes with the next)."""
        with self._sending:
            self._queue.append((sub, waiter))
            if self._in_flight:
                return
            self._in_flight = time.monotonic()
        self._send_next()

    def _kick(self) -> None:
        with self._sending:
            if not self._queue or (self._in_flight and time.monotonic() - self._in_flight < _STUCK):
                return
            self._in_flight = time.monotonic()
        self._send_next()

    def _send_next(self) -> None:
        """Send every queued commit as one raft entry (called with the in-flight mark taken)."""
        with self._sending:
            batch, self._queue = self._queue, []
            if not batch:
                self._in_flight = 0.0
                return
            self._in_flight = time.monotonic()
        payload = orjson.dumps({"subs": [sub for sub, _ in batch]})

        def on_result(_result, error) -> None:  # the raft thread: applied here, or failed
            if error != FAIL_REASON.SUCCESS:
                for _sub, waiter in batch:
                    if waiter.applied is None:
                        waiter.error = error
                        waiter.event.set()
            self._send_next()

        self.raft.store_entry(payload, callback=on_result)

    # -- every member: apply committed entries in order (raft thread) ---------

    def _apply(self, payload: bytes, index: int) -> None:
        store = self.store
        with store.lock:
            if index < self.applied_index or (index == self.applied_index and self.applied_parts == _ALL):
                return  # already in this member's store (a journal replayed at start)
            entry = orjson.loads(payload)
            subs = entry["subs"] if "subs" in entry else [entry]
            first = self.applied_parts if index == self.applied_index else 0
            for part in range(first, len(subs)):
                last = part == len(subs) - 1
                self._apply_one(subs[part], index, _ALL if last else part + 1)

    def _apply_one(self, sub: dict, index: int, parts: int) -> None:
        """One commit of an entry, checked and applied as one local commit with the applied position."""
        store = self.store
        ops = sub["ops"]
        ok = _unchanged_since_written(store, ops)
        ok = ok and all(digest(store.get(table, key)) == seen for table, key, seen in sub.get("reads", ()))
        for slot, value, holder in sub.get("probes", ()) if ok else ():
            now = store.unique_holder(slot, _hashable(value))
            if now is not False and now != holder:
                ok = False
                break
        changes = []
        if ok:
            ctx = ChangeContext(*sub["ctx"]) if sub["ctx"] else None
            changes = [Change(table, key, None, new, ctx if i >= 0 else None) for table, key, _s, new, i in ops]
        meta = {"id": APPLIED, "index": index} if parts == _ALL else {"id": APPLIED, "index": index, "parts": parts}
        work, ticket = store.apply_replicated(changes, (STATE_TABLE, APPLIED, meta))
        self.applied_index, self.applied_parts = index, parts
        entry_id = sub["id"]
        if entry_id.startswith(self.member_id + ":"):
            self._recent[entry_id] = ok
            if len(self._recent) > _RECENT:
                self._recent.popitem(last=False)
        waiter = self._waiting.get(entry_id)
        if waiter is not None and waiter.applied is None:
            waiter.applied, waiter.work, waiter.ticket = ok, work, ticket
            waiter.event.set()

    # -- snapshots (PySyncObj's full dump) -----------------------------------

    def _dump(self, filename: str, raft_data) -> None:
        """Called on the raft thread: the store's tables at the applied index, and PySyncObj's own data."""
        head = raft_pickle.dumps(raft_data)
        with self.store.lock:  # between entries: every commit of the applied one is in
            index, tables = self.applied_index, self.store.export_tables()
        body = orjson.dumps({"index": index, "tables": tables})
        with open(filename, "wb") as out:
            out.write(struct.pack(">Q", len(head)))
            out.write(head)
            out.write(body)

    def _load(self, filename: str):
        with open(filename, "rb") as src:
            data = src.read()
        (size,) = struct.unpack(">Q", data[:8])
        raft_data = raft_pickle.loads(data[8 : 8 + size])
        body = orjson.loads(data[8 + size :])
        with self.store.lock:
            if body["index"] > self.applied_index:  # behind the snapshot: take it (a member's own is never ahead)
                self.store.load_replicated(body["tables"])
                self.applied_index, self.applied_parts = body["index"], _ALL
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

    def cut_off(self, addresses) -> None:
        """Stop raft traffic with the members at ``addresses`` (raft ``HOST:PORT``); empty: heal."""
        self.raft.cut_off = frozenset(addresses)

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
