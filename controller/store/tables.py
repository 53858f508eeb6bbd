"""TinyDB extension points for the store: a live in-memory Storage and a keyed Table.

Stock TinyDB rebuilds and rewrites the whole table on every write. Here the
storage holds the live tables, and a write changes one key through
``LiveStorage.apply``, which hands the resulting ``Change`` to the Store's open
transaction. The Store journals it; nothing here touches a file.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Mapping

import orjson
from tinydb import TinyDB
from tinydb.storages import Storage
from tinydb.table import Table

from controller.store.change_context import ChangeContext

Tables = dict[str, dict[str, dict]]


@dataclass(frozen=True)
class Change:
    """One record change of a commit; ``new`` is None when the record was deleted.

    ``context`` is the source of the write (None when the controller made it on its own).
    """

    table: str
    key: str
    old: dict | None
    new: dict | None
    context: ChangeContext | None = None


def copy_record(record: Mapping) -> dict:
    """A deep, JSON-clean copy: what is kept in memory is exactly what reloads from disk."""
    if type(record) is not dict and not isinstance(record, Mapping):  # NOTE: the typing check costs ~30 us
        raise TypeError(f"a record must be a dict, not {type(record).__name__}")
    return orjson.loads(orjson.dumps(dict(record)))


_ATOMS = frozenset({str, int, float, bool, type(None)})


def copy_value(value: Any) -> Any:
    """A deep copy of a JSON value (a request body's): several times faster than ``copy.deepcopy``."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return {key: copy_value(inner) for key, inner in value.items()}
    if kind is list:
        return [copy_value(inner) for inner in value]
    return copy.deepcopy(value)


class LiveStorage(Storage):
    """TinyDB storage over the live tables; every change goes through ``apply``."""

    def __init__(
        self, tables: Tables, transaction: Callable[[], ContextManager[None]], on_change: Callable[[Change], None]
    ):
        self.tables = tables
        self.transaction = transaction
        self._on_change = on_change

    def read(self) -> Tables:
        return dict(self.tables)  # a copy of the outer dict: TinyDB's drop_table mutates what it reads

    def write(self, data: Mapping[str, Mapping[str, Any]]) -> None:
        """Whole-database write (stock ``drop_table(s)``): applied as a diff."""
        with self.transaction():
            for name in set(self.tables) | set(data):
                self.sync_table(name, data.get(name) or {})

    def sync_table(self, name: str, docs: Mapping[Any, Mapping]) -> None:
        """Make table ``name`` hold exactly ``docs``, one change per differing key."""
        live = self.tables.get(name, {})
        if docs is live:
            return
        for key in [key for key in live if key not in docs]:
            self.apply(name, key, None)
        for key, doc in docs.items():
            if live.get(str(key)) != doc:
                self.apply(name, str(key), copy_record(doc))

    def apply(self, name: str, key: str, new: dict | None) -> Change | None:
        """Set (or with None delete) one record; the caller holds an open transaction."""
        docs = self.tables.get(name)
        old = docs.get(key) if docs is not None else None
        if new is None and old is None:
            return None
        self._set(name, key, new)
        change = Change(name, key, old, new)
        self._on_change(change)
        return change

    def revert(self, change: Change) -> None:
        self._set(change.table, change.key, change.old)

    def _set(self, name: str, key: str, doc: dict | None) -> None:
        # Empty tables are dropped so tables() lists only tables holding records.
        if doc is not None:
            self.tables.setdefault(name, {})[key] = doc
            return
        docs = self.tables.get(name)
        if docs is not None and docs.pop(key, None) is not None and not docs:
            del self.tables[name]


class KeyedTable(Table):
    """A TinyDB table keyed by entity id (str) whose writes touch one key."""

    document_id_class = str

    def __init__(self, storage: LiveStorage, name: str, **_options: Any):
        # NOTE: no query cache: it would go stale on rollbacks, which bypass the table.
        super().__init__(storage, name, cache_size=0)

    def _read_table(self) -> dict[str, Mapping]:
        return self._storage.tables.get(self.name, {})

    def put_doc(self, key: str, doc: dict) -> Change:
        """Insert or replace one record (already copied by the caller)."""
        return self._storage.apply(self.name, key, doc)

    def remove_doc(self, key: str) -> Change | None:
        return self._storage.apply(self.name, key, None)

    def _update_table(self, updater: Callable[[dict], None]) -> None:
        """Stock write methods (update, remove, truncate...): run on a copy, apply the diff.

        This is O(table) like stock TinyDB, but journaled and transactional; the
        Store's own writes use ``put_doc``/``remove_doc`` instead.
        """
        draft = {key: copy_record(doc) for key, doc in self._read_table().items()}
        updater(draft)
        with self._storage.transaction():
            self._storage.sync_table(self.name, draft)

    def _get_next_id(self):
        raise TypeError("keyed tables have no generated ids: insert a Document with a doc_id")


class KeyedTinyDB(TinyDB):
    """TinyDB over a ``LiveStorage`` instance, handing out ``KeyedTable``s."""

    table_class = KeyedTable

    def __init__(self, storage: LiveStorage):
        super().__init__(storage=lambda: storage)
