"""Reference-counted pairs A -> B produced by policies (e.g. identity -> dial service).

A pair (a, b) exists while at least one policy of the relation matches a on its
A-side list and b on its B-side list. Counting every pair explicitly costs
|A| x |B| entries (about 10^8 for 100,000 identities and 2,000 services), so the
counters are factored on both sides:

* A-side: entities of one attribute class that are named by the same ``@id``
  policies form a ``Group``; they match exactly the same policies.
* B-side: a group counts, per B attribute class, the policies that match that class
  (``cc``) and, per B entity, the policies naming it by ``@id`` (``ce``).

b is a target of a iff ``cc[class(b)] > 0 or ce[b] > 0`` in a's group, so access
checks are two lookups and every counter update touches classes, not entities.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from controller.policy.index import AttrClass

# (B classes matched by a policy, B entity ids it names that exist)
BSide = tuple[Iterable[AttrClass], Iterable[str]]


class Group:
    """A-side entities of one class sharing the same explicit (``@id``) policies."""

    __slots__ = ("cls", "extra", "ids", "policies", "cc", "ce")

    def __init__(self, cls: AttrClass, extra: frozenset[str]):
        self.cls = cls
        self.extra = extra
        self.ids: set[str] = set()
        self.policies: set[str] = set()
        self.cc: dict[AttrClass, int] = {}
        self.ce: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"Group({self.cls!r}, extra={sorted(self.extra)!r}, ids={len(self.ids)})"


class Relation:
    """Pairs between two entity kinds through one kind (and type) of policy."""

    def __init__(self, name: str, pkind: str, a_kind: str, b_kind: str, ptype: str | None = None):
        self.name, self.pkind, self.a_kind, self.b_kind, self.ptype = name, pkind, a_kind, b_kind, ptype
        self.pids: set[str] = set()
        self.group_of: dict[str, Group] = {}
        self.policy_groups: dict[str, set[Group]] = {}
        self.class_groups: dict[AttrClass, set[Group]] = {}  # B class -> groups with cc > 0
        self.id_groups: dict[str, set[Group]] = {}  # B id -> groups with ce > 0

    # -- queries ------------------------------------------------------------------
    def targets(self, a: str) -> set[str]:
        group = self.group_of.get(a)
        if group is None:
            return set()
        result = set(group.ce)
        for cls in group.cc:
            result |= cls.ids
        return result

    def has(self, a: str, b: str, b_cls: AttrClass | None) -> bool:
        group = self.group_of.get(a)
        if group is None or b_cls is None:
            return False
        return b_cls in group.cc or b in group.ce

    def source_groups(self, b: str, b_cls: AttrClass | None) -> set[Group]:
        if b_cls is None:
            return set()
        return self.class_groups.get(b_cls, set()) | self.id_groups.get(b, set())

    def sources(self, b: str, b_cls: AttrClass | None) -> set[str]:
        result: set[str] = set()
        for group in self.source_groups(b, b_cls):
            result |= group.ids
        return result

    # -- B-side changes of a policy -------------------------------------------------
    def b_classes_change(self, pid: str, classes: Iterable[AttrClass], delta: int) -> list[Group]:
        """A policy starts (+1) or stops (-1) matching B classes; returns groups whose targets changed."""
        classes = list(classes)
        if not classes:
            return []
        return [g for g in self.policy_groups.get(pid, ()) if _bump(g.cc, self.class_groups, g, classes, delta)]

    def b_ids_change(self, pid: str, ids: Iterable[str], delta: int) -> list[Group]:
        """A policy starts (+1) or stops (-1) naming existing B entities by id."""
        ids = list(ids)
        if not ids:
            return []
        return [g for g in self.policy_groups.get(pid, ()) if _bump(g.ce, self.id_groups, g, ids, delta)]

    # -- A-side changes -------------------------------------------------------------
    def class_gained(self, cls: AttrClass, pid: str, b_side: BSide) -> None:
        """A policy starts matching an A class by attributes."""
        for group in list(cls.groups.get(self.name, {}).values()):
            if pid not in group.policies:
                self._attach(group, pid, b_side)

    def class_lost(self, cls: AttrClass, pid: str, b_side: BSide) -> None:
        """A policy stops matching an A class; groups naming it by id keep it."""
        for group in list(cls.groups.get(self.name, {}).values()):
            if pid in group.policies and pid not in group.extra:
                self._detach(group, pid, b_side)

    def place(
        self, a: str, cls: AttrClass, extra: frozenset[str], desired: set[str], b_side_of: Callable[[str], BSide]
    ) -> None:
        """Put an A entity in the group of (cls, extra), whose policies are ``desired``."""
        old = self.group_of.get(a)
        if old is not None and old.cls is cls and old.extra == extra:
            return
        groups = cls.groups.setdefault(self.name, {})
        target = groups.get(extra)
        if target is None and old is not None and len(old.ids) == 1:
            # The entity is alone in its group: re-key the group instead of copying it.
            self._unregister(old)
            old.cls, old.extra = cls, extra
            groups[extra] = old
            self._sync(old, desired, b_side_of)
            return
        if target is None:
            target = groups[extra] = Group(cls, extra)
            if old is not None:
                self._copy(old, target)
            self._sync(target, desired, b_side_of)
        self._leave(a)
        target.ids.add(a)
        self.group_of[a] = target

    def remove(self, a: str) -> None:
        self._leave(a)

    def _leave(self, a: str) -> None:
        group = self.group_of.pop(a, None)
        if group is None:
            return
        group.ids.discard(a)
        if not group.ids:
            self._drop(group)

    # -- group bookkeeping ----------------------------------------------------------
    def _attach(self, group: Group, pid: str, b_side: BSide) -> None:
        classes, ids = b_side
        group.policies.add(pid)
        self.policy_groups.setdefault(pid, set()).add(group)
        _bump(group.cc, self.class_groups, group, classes, 1)
        _bump(group.ce, self.id_groups, group, ids, 1)

    def _detach(self, group: Group, pid: str, b_side: BSide) -> None:
        classes, ids = b_side
        group.policies.discard(pid)
        _discard_in(self.policy_groups, pid, group)
        _bump(group.cc, self.class_groups, group, classes, -1)
        _bump(group.ce, self.id_groups, group, ids, -1)

    def _sync(self, group: Group, desired: set[str], b_side_of: Callable[[str], BSide]) -> None:
        for pid in group.policies - desired:
            self._detach(group, pid, b_side_of(pid))
        for pid in desired - group.policies:
            self._attach(group, pid, b_side_of(pid))

    def _copy(self, source: Group, target: Group) -> None:
        target.policies = set(source.policies)
        target.cc = dict(source.cc)
        target.ce = dict(source.ce)
        for pid in target.policies:
            self.policy_groups.setdefault(pid, set()).add(target)
        for cls in target.cc:
            self.class_groups.setdefault(cls, set()).add(target)
        for b in target.ce:
            self.id_groups.setdefault(b, set()).add(target)

    def _unregister(self, group: Group) -> None:
        groups = group.cls.groups.get(self.name, {})
        if groups.get(group.extra) is group:
            del groups[group.extra]

    def _drop(self, group: Group) -> None:
        self._unregister(group)
        for pid in group.policies:
            _discard_in(self.policy_groups, pid, group)
        for cls in group.cc:
            _discard_in(self.class_groups, cls, group)
        for b in group.ce:
            _discard_in(self.id_groups, b, group)


def _bump(counts: dict, index: dict, group: Group, keys: Iterable, delta: int) -> bool:
    """Add ``delta`` to each key's count, keeping ``index`` (key -> groups with count > 0)."""
    changed = False
    for key in keys:
        count = counts.get(key, 0) + delta
        if count > 0:
            counts[key] = count
            if count == 1 and delta > 0:
                index.setdefault(key, set()).add(group)
                changed = True
        else:
            # A count never goes below zero: each -1 undoes an earlier +1.
            del counts[key]
            _discard_in(index, key, group)
            changed = True
    return changed


def _discard_in(index: dict, key, value) -> None:
    values = index.get(key)
    if values is not None:
        values.discard(value)
        if not values:
            del index[key]
