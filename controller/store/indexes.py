"""In-memory secondary indexes kept in step with the store by its listener.

They are never persisted: each is rebuilt from the table on start, so the
data folder holds only records. Building one reads the committed records and
registers nothing: whoever owns the store registers ``on_changes`` as a listener
(``Controller._register_listeners``), under the same hold of the store lock, so
no commit falls between the two.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Hashable, Iterable

KeyFn = Callable[[dict], Hashable | None]
_NONE: frozenset[str] = frozenset()


class Index:
    """State derived from one store's records; ``on_changes`` keeps it in step once registered."""

    #: the one table it follows (None: changes to any table)
    table: str | None = None

    def on_changes(self, changes) -> None:
        raise NotImplementedError


class Indexes(Index):
    """Many indexes behind one listener: a commit's changes reach only the indexes of their table."""

    def __init__(self, indexes: Iterable[Index]):
        self._by_table: dict[str | None, list[Index]] = defaultdict(list)
        for index in indexes:
            self._by_table[index.table].append(index)

    def on_changes(self, changes) -> None:
        by_table, grouped = self._by_table, {}
        for change in changes:
            if change.table in by_table:
                grouped.setdefault(change.table, []).append(change)
        for table, group in grouped.items():
            for index in by_table[table]:
                index.on_changes(group)
        for index in by_table.get(None, ()):
            index.on_changes(changes)


class UniqueIndex(Index):
    """Maps a derived key (e.g. a name) to the one record key that has it."""

    def __init__(self, store, table: str, key_fn: KeyFn):
        self.table, self.key_fn = table, key_fn
        self._map: dict[Hashable, str] = {}
        self._store = store
        code = getattr(key_fn, "__code__", None)
        where = f"{Path(code.co_filename).name}:{code.co_firstlineno}" if code else getattr(key_fn, "__qualname__", "")
        #: the same on every cluster member (same code): a write's probes name the index by it
        self.slot = f"{table}|{where}"
        with store.lock:
            for record in store.values(table):
                self._add(record)
            store.register_unique(self.slot, self)  # the replicator checks what a write asked of it

    def get(self, key: Hashable) -> str | None:
        holder = self._map.get(key)
        if self._store._probes is not None:  # in a cluster's write: who held it is a precondition
            self._store.note_probe(self.slot, key, holder)
        return holder

    def holder(self, key: Hashable) -> str | None:
        """``get`` without noting a probe (the replicator's check as an entry applies)."""
        return self._map.get(key)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._map

    def __len__(self) -> int:
        return len(self._map)

    def _add(self, record: dict) -> None:
        key = self.key_fn(record)
        if key is not None:
            self._map[key] = record["id"]

    def _remove(self, record: dict) -> None:
        key = self.key_fn(record)
        if key is not None and self._map.get(key) == record["id"]:
            del self._map[key]

    def on_changes(self, changes) -> None:
        for change in changes:
            if change.table != self.table:
                continue
            if change.old is not None:
                self._remove(change.old)
            if change.new is not None:
                self._add(change.new)


class MultiIndex(Index):
    """Maps a derived key (e.g. an identity id) to the set of record keys that have it."""

    def __init__(
        self, store, table: str, key_fn: Callable[[dict], Hashable | Iterable[Hashable] | None], many: bool = False
    ):
        self.table, self.key_fn, self.many = table, key_fn, many
        self._map: dict[Hashable, set[str]] = defaultdict(set)
        with store.lock:
            for record in store.values(table):
                self._add(record)

    def get(self, key: Hashable) -> frozenset[str]:
        """The record keys with ``key``, as of now: a copy (made in one step), so a caller may iterate it without the
        store lock while another thread commits (iterating the index's own set then failed: "Set changed size")."""
        ids = self._map.get(key)
        return frozenset(ids) if ids else _NONE

    def live(self, key: Hashable) -> set[str] | frozenset[str]:
        """:meth:`get` without the copy, for a caller that holds the store lock (no commit changes it meanwhile)."""
        return self._map.get(key) or _NONE

    def keys(self) -> list[Any]:
        return [key for key, ids in list(self._map.items()) if ids]  # the items copied in one step, as ``get``

    def _keys_of(self, record: dict) -> Iterable[Hashable]:
        value = self.key_fn(record)
        if value is None:
            return ()
        return value if self.many else (value,)

    def _add(self, record: dict) -> None:
        for key in self._keys_of(record):
            self._map[key].add(record["id"])

    def _remove(self, record: dict) -> None:
        for key in self._keys_of(record):
            ids = self._map.get(key)
            if ids is not None:
                ids.discard(record["id"])
                if not ids:
                    del self._map[key]

    def on_changes(self, changes) -> None:
        for change in changes:
            if change.table != self.table:
                continue
            if change.old is not None:
                self._remove(change.old)
            if change.new is not None:
                self._add(change.new)


class DueIndex(Index):
    """Record keys ordered by a derived time (e.g. last activity): ``due`` costs what is due.

    A heap with lazy deletion: a change pushes the record's new time, and entries
    whose record has since changed or gone are dropped as they surface.
    """

    def __init__(self, store, table: str, key_fn: Callable[[dict], str | None]):
        self.table, self.key_fn = table, key_fn
        self._heap: list[tuple[str, str]] = []
        self._current: dict[str, str] = {}  # record key -> the time its live heap entry holds
        with store.lock:
            for record in store.values(table):
                self._add(record)
            heapq.heapify(self._heap)

    def __len__(self) -> int:
        return len(self._current)

    def push(self, when: str, key: str) -> None:
        """(Re)schedule ``key`` at ``when``, e.g. after finding it still active."""
        self._current[key] = when
        heapq.heappush(self._heap, (when, key))

    def due(self, upto: str) -> list[str]:
        """Pop and return the keys whose time is at or before ``upto``."""
        heap, current, out = self._heap, self._current, []
        while heap and heap[0][0] <= upto:
            when, key = heapq.heappop(heap)
            if current.get(key) == when:
                del current[key]
                out.append(key)
        return out

    def _add(self, record: dict) -> None:
        when = self.key_fn(record)
        if when is not None:
            self._current[record["id"]] = when
            self._heap.append((when, record["id"]))

    def on_changes(self, changes) -> None:
        for change in changes:
            if change.table != self.table:
                continue
            if change.new is None:
                self._current.pop(change.key, None)
                continue
            when = self.key_fn(change.new)
            if change.old is not None and when == self._current.get(change.key):
                continue
            if when is None:
                self._current.pop(change.key, None)
            else:
                self.push(when, change.key)
