"""Per-kind indexes of the policy engine: attribute classes and role references.

Entities with the same role attributes match the same ``#attr``/``#all`` roles, so
the engine groups them into one ``AttrClass`` and evaluates policies per class;
only ``@id`` entries are handled per entity. Networks hold far fewer classes than
entities, which keeps policy changes and memory independent of the entity count.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from controller.policy.roles import ALL_OF, ANY_OF, normalize_semantic, split_roles


@dataclass(frozen=True, slots=True)
class RoleSpec:
    """One parsed role list of a policy with its policy's semantic."""

    semantic: str | None = None
    attrs: frozenset[str] = frozenset()
    ids: frozenset[str] = frozenset()
    all: bool = False

    @classmethod
    def parse(cls, semantic: str, roles: Iterable[str]) -> RoleSpec:
        attrs, ids, has_all = split_roles(roles or ())
        return cls(normalize_semantic(semantic), frozenset(attrs), frozenset(ids), has_all)

    def matches_attrs(self, attrs: frozenset[str]) -> bool:
        """Whether entities carrying ``attrs`` match by ``#all`` or ``#attr`` entries."""
        if self.all:
            return True
        if not self.attrs:
            return False
        if self.semantic == ALL_OF:
            return self.attrs <= attrs
        if self.semantic == ANY_OF:
            return not self.attrs.isdisjoint(attrs)
        return False


EMPTY_SPEC = RoleSpec()


class AttrClass:
    """The entities of one kind carrying exactly ``attrs``."""

    __slots__ = ("attrs", "ids", "pols", "groups")

    def __init__(self, attrs: frozenset[str]):
        self.attrs = attrs
        self.ids: set[str] = set()
        self.pols: dict[str, set[str]] = {}  # policy kind -> ids of policies matching the class
        self.groups: dict[str, dict] = {}  # relation name -> {explicit policies: Group}

    def __repr__(self) -> str:
        return f"AttrClass({sorted(self.attrs)!r}, ids={len(self.ids)})"


class KindIndex:
    """Entities of one kind, their classes, and which policies name what."""

    def __init__(self, kind: str):
        self.kind = kind
        self.class_of: dict[str, AttrClass] = {}
        self.classes: dict[frozenset[str], AttrClass] = {}
        self.by_attr: dict[str, set[AttrClass]] = {}
        # Reverse role indexes per policy kind: which policies must be looked at for an entity.
        self.ref_all: dict[str, set[str]] = {}
        self.ref_attr: dict[str, dict[str, set[str]]] = {}
        self.ref_id: dict[str, dict[str, set[str]]] = {}

    # -- entities and classes -------------------------------------------------------
    def exists(self, entity_id: str) -> bool:
        return entity_id in self.class_of

    def get_class(self, attrs: frozenset[str]) -> AttrClass | None:
        return self.classes.get(attrs)

    def add_class(self, attrs: frozenset[str]) -> AttrClass:
        cls = AttrClass(attrs)
        self.classes[attrs] = cls
        for attr in attrs:
            self.by_attr.setdefault(attr, set()).add(cls)
        return cls

    def drop_class(self, cls: AttrClass) -> None:
        del self.classes[cls.attrs]
        for attr in cls.attrs:
            holders = self.by_attr[attr]
            holders.discard(cls)
            if not holders:
                del self.by_attr[attr]

    def set_class(self, entity_id: str, cls: AttrClass | None) -> AttrClass | None:
        """Move an entity to ``cls`` (None removes it); returns its former class."""
        old = self.class_of.pop(entity_id, None)
        if old is not None:
            old.ids.discard(entity_id)
        if cls is not None:
            cls.ids.add(entity_id)
            self.class_of[entity_id] = cls
        return old

    def classes_matching(self, spec: RoleSpec) -> set[AttrClass]:
        """Classes matched by the ``#`` entries of a spec, looked up by attribute."""
        if spec.all:
            return set(self.classes.values())
        if not spec.attrs or spec.semantic not in (ALL_OF, ANY_OF):
            return set()
        holders = [self.by_attr.get(attr, ()) for attr in spec.attrs]
        if spec.semantic == ANY_OF:
            return set().union(*holders)
        smallest = min(holders, key=len)
        return {cls for cls in smallest if spec.attrs <= cls.attrs}

    def ids_of_classes(self, classes: Iterable[AttrClass]) -> set[str]:
        result: set[str] = set()
        for cls in classes:
            result |= cls.ids
        return result

    def with_attribute(self, attr: str) -> set[str]:
        return self.ids_of_classes(self.by_attr.get(attr, ()))

    def attributes(self) -> list[str]:
        # Classes die with their last entity, so every key is carried by someone.
        return sorted(self.by_attr)

    # -- role references ------------------------------------------------------------
    def reference(self, pkind: str, policy_id: str, spec: RoleSpec, add: bool) -> None:
        """Record (or forget) which attributes, ids and ``#all`` a policy names."""
        if spec.all:
            _toggle(self.ref_all.setdefault(pkind, set()), policy_id, add)
        by_attr = self.ref_attr.setdefault(pkind, {})
        for attr in spec.attrs:
            _toggle_in(by_attr, attr, policy_id, add)
        by_id = self.ref_id.setdefault(pkind, {})
        for entity_id in spec.ids:
            _toggle_in(by_id, entity_id, policy_id, add)

    def candidate_policies(self, pkind: str, attrs: frozenset[str]) -> set[str]:
        """Policies of a kind that may match a class with ``attrs`` by ``#`` entries."""
        result = set(self.ref_all.get(pkind, ()))
        by_attr = self.ref_attr.get(pkind, {})
        for attr in attrs:
            result |= by_attr.get(attr, set())
        return result

    def naming(self, pkind: str, entity_id: str) -> set[str]:
        """Policies of a kind naming ``@entity_id`` (whether or not it exists)."""
        return self.ref_id.get(pkind, {}).get(entity_id, set())

    def policies_of(self, pkind: str, entity_id: str) -> set[str]:
        """Policies of a kind currently matching an existing entity."""
        cls = self.class_of.get(entity_id)
        if cls is None:
            return set()
        return cls.pols.get(pkind, set()) | self.naming(pkind, entity_id)


def _toggle(target: set[str], value: str, add: bool) -> None:
    if add:
        target.add(value)
    else:
        target.discard(value)


def _toggle_in(index: dict[str, set[str]], key: str, value: str, add: bool) -> None:
    if add:
        index.setdefault(key, set()).add(value)
        return
    values = index.get(key)
    if values is not None:
        values.discard(value)
        if not values:
            del index[key]
