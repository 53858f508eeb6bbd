"""In-memory secondary indexes kept in step with the store by its listener.

They are never persisted: each is rebuilt from the table on start, so the
data folder holds only records.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Hashable, Iterable

KeyFn = Callable[[dict], Hashable | None]


class UniqueIndex:
    """Maps a derived key (e.g. a name) to the one record key that has it."""

    def __init__(self, store, table: str, key_fn: KeyFn):
        self.table, self.key_fn = table, key_fn
        self._map: dict[Hashable, str] = {}
        with store.lock:
            for record in store.values(table):
                self._add(record)
            store.add_listener(self._on_changes)

    def get(self, key: Hashable) -> str | None:
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

    def _on_changes(self, changes) -> None:
        for change in changes:
            if change.table != self.table:
                continue
            if change.old is not None:
                self._remove(change.old)
            if change.new is not None:
                self._add(change.new)


class MultiIndex:
    """Maps a derived key (e.g. an identity id) to the set of record keys that have it."""

    def __init__(self, store, table: str, key_fn: Callable[[dict], Hashable | Iterable[Hashable] | None], many: bool = False):
        self.table, self.key_fn, self.many = table, key_fn, many
        self._map: dict[Hashable, set[str]] = defaultdict(set)
        with store.lock:
            for record in store.values(table):
                self._add(record)
            store.add_listener(self._on_changes)

    def get(self, key: Hashable) -> set[str]:
        return self._map.get(key, set())

    def keys(self) -> list[Any]:
        return [key for key, ids in self._map.items() if ids]

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

    def _on_changes(self, changes) -> None:
        for change in changes:
            if change.table != self.table:
                continue
            if change.old is not None:
                self._remove(change.old)
            if change.new is not None:
                self._add(change.new)
