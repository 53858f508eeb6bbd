"""Delete cascades: what else goes when an entity goes.

The references declared in ``controller/entities.py`` give the plain rules:
records referencing the deleted one are deleted (their own cascades run), or
the field is cleared, or the id leaves the list. Cascades that do real work
(closing API sessions, engine lookups, in-memory state) are registered as
functions. ``EntityManager.delete`` runs both inside the same store
transaction, so a cascade is all-or-nothing.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable

from controller.clock import rfc3339
from controller.entities import CASCADE, ENTITIES, REMOVE_ITEM, Ref, references, target_table
from controller.store.indexes import Index


def with_path(record: dict, path: str, value) -> dict:
    """A copy of ``record`` with dotted ``path`` set (stored records are never mutated)."""
    head, _, rest = path.partition(".")
    out = dict(record)
    out[head] = with_path(out.get(head) or {}, rest, value) if rest else value
    return out


class ReferenceIndex(Index):
    """Record keys by the id each derived reference names: one store listener (``on_changes``) for them all.

    A table's index is built on its first use (a delete of what it references), so
    starting a large controller costs nothing here; commits keep it in step after.
    Like every index it holds the committed state: a build inside a transaction
    takes that transaction's changes back out, since its commit replays them.
    """

    def __init__(self, store, refs: list[tuple[str, Ref]]):
        self.store = store
        self._refs: dict[str, list[Ref]] = defaultdict(list)
        for table, ref in refs:
            self._refs[table].append(ref)
        self._built: dict[str, list[tuple[Ref, dict[str, set[str]]]]] = {}

    def holders(self, table: str, ref: Ref, target_id: str) -> list[str]:
        for candidate, index in self._entries(table):
            if candidate is ref:
                return sorted(index.get(target_id, ()))
        return []

    def _entries(self, table: str) -> list[tuple[Ref, dict[str, set[str]]]]:
        entries = self._built.get(table)
        if entries is None:
            with self.store.lock:
                entries = [(ref, defaultdict(set)) for ref in self._refs.get(table, ())]
                for record in self.store.values(table):
                    self._update(entries, None, record)
                for change in reversed(self.store.uncommitted()):
                    if change.table == table:
                        self._update(entries, change.new, change.old)
                self._built[table] = entries
        return entries

    def on_changes(self, changes) -> None:
        for change in changes:
            entries = self._built.get(change.table)
            if entries:
                self._update(entries, change.old, change.new)

    @staticmethod
    def _update(entries, old: dict | None, new: dict | None) -> None:
        for ref, index in entries:
            if old is not None:
                for target_id in _ids(old, ref):
                    holders = index.get(target_id)
                    if holders is not None:
                        holders.discard(old["id"])
                        if not holders:
                            del index[target_id]
            if new is not None:
                for target_id in _ids(new, ref):
                    index[target_id].add(new["id"])


def _ids(record: dict, ref: Ref) -> list[str]:
    value = record.get(ref.field)
    if not value:
        return []
    return list(value) if ref.many else [value]


class Cascades:
    def __init__(self, store, clock):
        self.store, self.clock = store, clock
        self._hooks: dict[str, list[tuple[str, Callable[[dict], None]]]] = defaultdict(list)
        derived = [(table, ref) for table, ref in references() if ref.derived]
        self._rules: dict[str, list[tuple[str, Ref]]] = defaultdict(list)
        for table, ref in derived:
            self._rules[target_table(ref)].append((table, ref))
        self.index = ReferenceIndex(store, derived)

    def register(self, entity: str, fn: Callable[[dict], None], name: str = "") -> None:
        """Run ``fn(record)`` before the derived rules when an ``entity`` (a declared key) is deleted."""
        table = ENTITIES[entity].table
        self._hooks[table].append((name or getattr(fn, "__qualname__", ""), fn))

    def hook_names(self, table: str) -> list[str]:
        return [name for name, _ in self._hooks.get(table, ())]

    def run(self, table: str, record: dict) -> None:
        for _, fn in self._hooks.get(table, ()):
            fn(record)
        for holder_table, ref in self._rules.get(table, ()):
            for key in self.index.holders(holder_table, ref, record["id"]):
                self._apply(holder_table, ref, key, record["id"])

    def _apply(self, table: str, ref: Ref, key: str, target_id: str) -> None:
        holder = self.store.get(table, key)
        if holder is None:
            return
        if ref.on_delete == CASCADE:
            self.run(table, holder)
            self.store.delete(table, key)
            return
        if ref.on_delete == REMOVE_ITEM:
            value = [item for item in holder.get(ref.field) or [] if item != target_id]
        else:  # CLEAR
            value = ref.cleared
        self.store.put(table, key, {**with_path(holder, ref.field, value), "updated_at": rfc3339(self.clock.now())})
