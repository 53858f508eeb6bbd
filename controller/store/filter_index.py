"""Indexes for the common filters, so a selective filtered list costs what it returns.

:class:`FilterIndex` reads a parsed filter and, where it can, answers from
indexes a *superset* of the matching records: ``id = / in``, string ``field =
/ in`` (e.g. ``name = "x"``), ``field contains "xyz"`` (trigrams),
``anyOf(roleAttributes) = / in`` and ``tags.key = value``. ``list_page`` still
applies the whole predicate to those candidates, so results are those of a
scan by construction. Indexes are built on first use (start-up pays nothing
for fields nobody filters on) and then follow the store through the one
listener of their ``FilterIndex`` (``on_changes``), registered with the others.
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Iterable

from controller.errors import ControllerError
from controller.store.indexes import Index, MultiIndex
from controller.store.query import And, Compare, FieldSet, In, Or, Path, SetFn, _spec, parse

KeysOf = Callable[[dict], Iterable[Hashable]]
_TRIGRAM = 3


def _value_keys(get: Callable[[dict], Any]) -> KeysOf:
    def keys(record):
        value = get(record)
        return (value,) if isinstance(value, (str, int, float)) else ()  # bool is an int: harmless superset

    return keys


def _element_keys(get: Callable[[dict], Any]) -> KeysOf:
    return lambda record: [v for v in (get(record) or ()) if isinstance(v, str)]


def _trigram_keys(get: Callable[[dict], Any]) -> KeysOf:
    def keys(record):
        value = get(record)
        if type(value) is not str:
            return ()
        return {value[i : i + _TRIGRAM] for i in range(len(value) - _TRIGRAM + 1)}

    return keys


def _intersect(sets: list[set[str]]) -> set[str]:
    """Intersect from the smallest up, stopping once few enough are left to just check."""
    result = set(sets[0])
    for other in sets[1:]:
        if len(result) <= 16:
            break
        result &= other
    return result


class FilterIndex(Index):
    """Candidate records for a filter on one table, from lazily built indexes."""

    def __init__(self, store, table: str, fields: FieldSet):
        self.store, self.table, self.fields = store, table, fields
        self._indexes: dict[tuple[str, str], MultiIndex] = {}

    def on_changes(self, changes) -> None:
        for index in self._indexes.values():  # those built so far
            index.on_changes(changes)

    def candidates(self, text: str | None) -> list[dict] | None:
        """The records that may match ``text``, or None when a scan is needed.

        Never raises for a bad filter: the list call reports that.
        """
        if not text or not isinstance(text, str):
            return None
        try:
            node = parse(text).predicate
            with self.store.lock:
                keys = self._plan(node)
                if keys is None:
                    return None
                return [r for r in map(self._get, keys) if r is not None]
        except (ControllerError, RecursionError):
            return None

    def _get(self, key: str) -> dict | None:
        return self.store.get(self.table, key)

    def _plan(self, node) -> set[str] | None:
        """Record keys ⊇ the matches of ``node``, or None when no index applies."""
        if isinstance(node, (And, Or)):
            return self._junction(node)
        if isinstance(node, (Compare, In)):
            return self._leaf(node)
        return None

    def _junction(self, node) -> set[str] | None:
        kind, parts = type(node), []
        while isinstance(node, kind):
            parts.append(node.left)
            node = node.right
        parts.append(node)
        if kind is And:  # any indexed conjunct bounds the whole: take the smallest
            found = [keys for keys in map(self._plan, parts) if keys is not None]
            return min(found, key=len) if found else None
        union: set[str] = set()
        for part in parts:
            keys = self._plan(part)
            if keys is None:
                return None  # one unindexed alternative needs the scan
            union |= keys
        return union

    def _leaf(self, node) -> set[str] | None:
        lhs = node.lhs
        op = "in" if isinstance(node, In) else node.op
        if not isinstance(node, In) and node.value.kind == "null":
            return None
        if isinstance(lhs, SetFn):
            return self._set_leaf(lhs, node, op)
        if not isinstance(lhs, Path) or lhs.quoted:
            return None
        field = self.fields.resolve(lhs.name)
        if field.derived or field.type not in ("string", "any"):
            return None
        vtype, op, operand = _spec(field.type, node, lhs.name)
        if op in ("=", "in"):
            values = operand if op == "in" else (operand,)
            if lhs.name == "id":
                return {v for v in values if isinstance(v, str)}
            index = self._index(lhs.name, "value", _value_keys(field.get))
            return set().union(*(index.live(v) for v in values))
        if op == "contains" and vtype == "string" and len(operand) >= _TRIGRAM:
            index = self._index(lhs.name, "trigram", _trigram_keys(field.get))
            grams = {operand[i : i + _TRIGRAM] for i in range(len(operand) - _TRIGRAM + 1)}
            return _intersect(sorted((index.live(g) for g in grams), key=len))
        return None

    def _set_leaf(self, lhs: SetFn, node, op: str) -> set[str] | None:
        target = lhs.target
        if lhs.fn != "anyOf" or not isinstance(target, Path) or target.quoted or op not in ("=", "in"):
            return None
        field = self.fields.resolve(target.name)
        if field.derived or field.type != "set":
            return None
        _vtype, op, operand = _spec("string", node, target.name)
        index = self._index(target.name, "element", _element_keys(field.get))
        values = operand if op == "in" else (operand,)
        return set().union(*(index.live(v) for v in values))

    def _index(self, name: str, kind: str, keys_of: KeysOf) -> MultiIndex:
        index = self._indexes.get((name, kind))
        if index is None:  # built under the store lock, which the caller holds
            index = self._indexes[(name, kind)] = MultiIndex(self.store, self.table, keys_of, many=True)
        return index
