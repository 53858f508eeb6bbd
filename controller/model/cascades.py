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


def with_path(record: dict, path: str, value) -> dict:
    """A copy of ``record`` with dotted ``path`` set (stored records are never mutated)."""
    head, _, rest = path.partition(".")
    out = dict(record)
    out[head] = with_path(out.get(head) or {}, rest, value) if rest else value
    return out


class ReferenceIndex:
    """Record keys by the id each derived reference names: one store listener for them all."""

    def __init__(self, store, refs: list[tuple[str, Ref]]):
        self._by_table: dict[str, list[tuple[Ref, dict[str, set[str]]]]] = defaultdict(list)
        for table, ref in refs:
            self._by_table[table].append((ref, defaultdict(set)))
        with store.lock:
            for table, entries in self._by_table.items():
                for record in store.values(table):
                    self._update(entries, None, record)
            store.add_listener(self._on_changes)

    def holders(self, table: str, ref: Ref, target_id: str) -> list[str]:
        for candidate, index in self._by_table.get(table, ()):
            if candidate is ref:
                return sorted(index.get(target_id, ()))
        return []

    def _on_changes(self, changes) -> None:
        for change in changes:
            entries = self._by_table.get(change.table)
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
