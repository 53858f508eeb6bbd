"""In-memory policy engine: which identities reach which services and edge routers.

Nothing here is persisted. The caller replays every entity and policy from the store
through the ``upsert_*`` methods on start, then mirrors each write. Indexes are
updated incrementally (an entity change re-evaluates only the policies that may
match it; a policy change re-evaluates only that policy, per attribute class), so
queries are lookups whose cost follows the answer, not the network.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterable, Iterator

from controller.policy import bulk
from controller.policy.changes import ChangeTracker
from controller.policy.index import EMPTY_SPEC, AttrClass, KindIndex, RoleSpec
from controller.policy.kinds import (
    BIND,
    DIAL,
    EDGE_ROUTER_POLICIES,
    EDGE_ROUTERS,
    IDENTITIES,
    KINDS,
    POLICY_KINDS,
    POSTURE_CHECKS,
    SERVICE_EDGE_ROUTER_POLICIES,
    SERVICE_POLICIES,
    SERVICES,
    policy_type,
)
from controller.policy.queries import PolicyQueries
from controller.policy.relation import BSide, Relation


def writes(method):
    """Run a write under the engine lock, then tell the listeners (outside the lock)."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self._lock:
            method(self, *args, **kwargs)
            affected = self._changes.collect()
        listeners = list(self._listeners)
        for number, listener in enumerate(listeners if affected else ()):
            # Each listener gets its own set; the last one takes the original (no copy).
            listener(affected if number == len(listeners) - 1 else set(affected))

    return wrapper


class Policy:
    """A policy as the engine sees it: parsed role lists and the classes they match."""

    __slots__ = ("id", "pkind", "type", "specs", "classes")

    def __init__(self, policy_id: str, pkind: str, ptype: str | None):
        self.id, self.pkind, self.type = policy_id, pkind, ptype
        self.specs: dict[str, RoleSpec] = {}
        self.classes: dict[str, set[AttrClass]] = {kind: set() for kind in POLICY_KINDS[pkind]}

    def __repr__(self) -> str:
        return f"Policy({self.pkind}:{self.id}, type={self.type})"


class PolicyEngine(PolicyQueries):
    """Entities, policies and the derived pairs; see the module docstring."""

    def __init__(self) -> None:
        self._kinds = {kind: KindIndex(kind) for kind in KINDS}
        self._policies: dict[str, dict[str, Policy]] = {pkind: {} for pkind in POLICY_KINDS}
        self._relations = {
            "dial": Relation("dial", SERVICE_POLICIES, IDENTITIES, SERVICES, DIAL),
            "bind": Relation("bind", SERVICE_POLICIES, IDENTITIES, SERVICES, BIND),
            "identityRouters": Relation("identityRouters", EDGE_ROUTER_POLICIES, IDENTITIES, EDGE_ROUTERS),
            "serviceRouters": Relation("serviceRouters", SERVICE_EDGE_ROUTER_POLICIES, SERVICES, EDGE_ROUTERS),
        }
        self._a_relations = {k: [r for r in self._relations.values() if r.a_kind == k] for k in KINDS}
        self._b_relations = {k: [r for r in self._relations.values() if r.b_kind == k] for k in KINDS}
        self._listeners: list[Callable[[set[str]], None]] = []
        # Writes come from the store thread while API threads read: one re-entrant lock guards both.
        self._lock = threading.RLock()
        self._changes = ChangeTracker(self)
        self._bulk = False  # inside bulk(): writes only record entities and policies

    def reset(self) -> None:
        """Forget every entity and policy, keeping the listeners; the caller replays the store."""
        listeners = list(self._listeners)
        self.__init__()
        for fn in listeners:
            self.add_listener(fn)

    @contextlib.contextmanager
    def bulk(self, also_affected: Iterable[str] = ()) -> Iterator[PolicyEngine]:
        """Load an empty engine in one go: upserts inside only record, the indexes are built on exit.

        Listeners then hear of every identity once (the whole access picture is new),
        plus ``also_affected`` (say, identities gone since the engine was last built).
        """
        with self._lock:
            if self._bulk or any(self._policies.values()) or any(i.class_of for i in self._kinds.values()):
                raise RuntimeError("bulk() needs an empty engine")
            self._bulk, tracking, self._changes.enabled = True, self._changes.enabled, False
            try:
                yield self
            finally:
                # Even after an error the indexes must describe what was loaded.
                bulk.build(self)
                self._bulk, self._changes.enabled = False, tracking
            affected = set(self._kinds[IDENTITIES].class_of).union(also_affected) if self._listeners else ()
        for listener in list(self._listeners) if affected else ():
            listener(set(affected))

    def size(self) -> int:
        """How many entities and policies the engine holds."""
        with self._lock:
            return sum(len(i.class_of) for i in self._kinds.values()) + sum(map(len, self._policies.values()))

    def add_listener(self, fn: Callable[[set[str]], None]) -> None:
        """Call ``fn(identity_ids)`` after each change that may alter those identities' access."""
        with self._lock:
            self._listeners.append(fn)
            self._changes.enabled = True

    # -- entities -----------------------------------------------------------------
    @writes
    def upsert_identity(self, entity_id: str, attrs: Iterable[str] = ()) -> None:
        self._upsert_entity(IDENTITIES, entity_id, attrs)

    @writes
    def remove_identity(self, entity_id: str) -> None:
        self._remove_entity(IDENTITIES, entity_id)

    @writes
    def upsert_service(self, entity_id: str, attrs: Iterable[str] = ()) -> None:
        self._upsert_entity(SERVICES, entity_id, attrs)

    @writes
    def remove_service(self, entity_id: str) -> None:
        self._remove_entity(SERVICES, entity_id)

    @writes
    def upsert_edge_router(self, entity_id: str, attrs: Iterable[str] = ()) -> None:
        self._upsert_entity(EDGE_ROUTERS, entity_id, attrs)

    @writes
    def remove_edge_router(self, entity_id: str) -> None:
        self._remove_entity(EDGE_ROUTERS, entity_id)

    @writes
    def upsert_posture_check(self, entity_id: str, attrs: Iterable[str] = ()) -> None:
        self._upsert_entity(POSTURE_CHECKS, entity_id, attrs)

    @writes
    def remove_posture_check(self, entity_id: str) -> None:
        self._remove_entity(POSTURE_CHECKS, entity_id)

    def _upsert_entity(self, kind: str, entity_id: str, attrs: Iterable[str]) -> None:
        index = self._kinds[kind]
        attrs = frozenset(attrs or ())
        if self._bulk:
            bulk.place_entity(index, entity_id, attrs)
            return
        old_cls = index.class_of.get(entity_id)
        if old_cls is not None and old_cls.attrs == attrs:
            return
        new_cls = index.get_class(attrs) or self._new_class(index, attrs)
        self._move_entity(index, entity_id, old_cls, new_cls)

    def _remove_entity(self, kind: str, entity_id: str) -> None:
        index = self._kinds[kind]
        if self._bulk:
            bulk.place_entity(index, entity_id, None)
            return
        old_cls = index.class_of.get(entity_id)
        if old_cls is not None:
            self._move_entity(index, entity_id, old_cls, None)

    def _move_entity(
        self, index: KindIndex, entity_id: str, old_cls: AttrClass | None, new_cls: AttrClass | None
    ) -> None:
        """Create, re-class or delete one entity and propagate its policy changes."""
        pkinds = self._pkinds_of(index.kind)
        before = {pkind: index.policies_of(pkind, entity_id) for pkind in pkinds}
        index.set_class(entity_id, new_cls)
        after = {pkind: index.policies_of(pkind, entity_id) for pkind in pkinds}
        for rel in self._a_relations[index.kind]:
            if new_cls is None:
                rel.remove(entity_id)
            else:
                self._place(rel, index, entity_id)
        if (old_cls is None) != (new_cls is None):
            self._entity_existence_changed(index, entity_id, 1 if new_cls is not None else -1)
        if old_cls is not None and not old_cls.ids:
            self._drop_class(index, old_cls)
        self._changes.entity_after(index.kind, entity_id, before, after)

    def _entity_existence_changed(self, index: KindIndex, entity_id: str, delta: int) -> None:
        """``@id`` entries count only for existing entities: start or stop counting them."""
        for rel in self._b_relations[index.kind]:
            for pid in index.naming(rel.pkind, entity_id) & rel.pids:
                self._changes.b_groups(rel, rel.b_ids_change(pid, [entity_id], delta))

    def _new_class(self, index: KindIndex, attrs: frozenset[str]) -> AttrClass:
        """Create a class and evaluate the policies that may match it by attributes."""
        cls = index.add_class(attrs)
        for pkind in self._pkinds_of(index.kind):
            matched = cls.pols.setdefault(pkind, set())
            for pid in index.candidate_policies(pkind, attrs):
                policy = self._policies[pkind][pid]
                if policy.specs.get(index.kind, EMPTY_SPEC).matches_attrs(attrs):
                    matched.add(pid)
                    policy.classes[index.kind].add(cls)
        for rel in self._b_relations[index.kind]:
            for pid in cls.pols.get(rel.pkind, set()) & rel.pids:
                rel.b_classes_change(pid, [cls], 1)
        return cls

    def _drop_class(self, index: KindIndex, cls: AttrClass) -> None:
        for rel in self._b_relations[index.kind]:
            for pid in cls.pols.get(rel.pkind, set()) & rel.pids:
                rel.b_classes_change(pid, [cls], -1)
        for pkind, pids in cls.pols.items():
            for pid in pids:
                self._policies[pkind][pid].classes[index.kind].discard(cls)
        index.drop_class(cls)

    # -- policies -----------------------------------------------------------------
    @writes
    def upsert_service_policy(
        self,
        policy_id: str,
        type: str,
        semantic: str,
        identity_roles: Iterable[str],
        service_roles: Iterable[str],
        posture_check_roles: Iterable[str] = (),
    ) -> None:
        ptype = policy_type(type)
        self._upsert_policy(
            SERVICE_POLICIES,
            policy_id,
            ptype,
            {
                IDENTITIES: RoleSpec.parse(semantic, identity_roles),
                SERVICES: RoleSpec.parse(semantic, service_roles),
                POSTURE_CHECKS: RoleSpec.parse(semantic, posture_check_roles),
            },
        )

    @writes
    def remove_service_policy(self, policy_id: str) -> None:
        self._remove_policy(SERVICE_POLICIES, policy_id)

    @writes
    def upsert_edge_router_policy(
        self, policy_id: str, semantic: str, identity_roles: Iterable[str], edge_router_roles: Iterable[str]
    ) -> None:
        self._upsert_policy(
            EDGE_ROUTER_POLICIES,
            policy_id,
            None,
            {
                IDENTITIES: RoleSpec.parse(semantic, identity_roles),
                EDGE_ROUTERS: RoleSpec.parse(semantic, edge_router_roles),
            },
        )

    @writes
    def remove_edge_router_policy(self, policy_id: str) -> None:
        self._remove_policy(EDGE_ROUTER_POLICIES, policy_id)

    @writes
    def upsert_service_edge_router_policy(
        self, policy_id: str, semantic: str, service_roles: Iterable[str], edge_router_roles: Iterable[str]
    ) -> None:
        self._upsert_policy(
            SERVICE_EDGE_ROUTER_POLICIES,
            policy_id,
            None,
            {
                SERVICES: RoleSpec.parse(semantic, service_roles),
                EDGE_ROUTERS: RoleSpec.parse(semantic, edge_router_roles),
            },
        )

    @writes
    def remove_service_edge_router_policy(self, policy_id: str) -> None:
        self._remove_policy(SERVICE_EDGE_ROUTER_POLICIES, policy_id)

    def _upsert_policy(self, pkind: str, policy_id: str, ptype: str | None, specs: dict[str, RoleSpec]) -> None:
        if self._bulk:
            policy = self._policies[pkind][policy_id] = Policy(policy_id, pkind, ptype)
            policy.specs = specs
            return
        policy = self._policies[pkind].get(policy_id)
        if policy is not None and policy.type != ptype:
            # A type change unlinks under the old type and relinks under the new one.
            self._clear_policy(policy)
            self._relation_of(policy).pids.discard(policy_id)
            policy.type = ptype
            self._relation_of(policy).pids.add(policy_id)
        if policy is None:
            policy = self._policies[pkind][policy_id] = Policy(policy_id, pkind, ptype)
            self._relation_of(policy).pids.add(policy_id)
        for kind in POLICY_KINDS[pkind]:
            self._set_list(policy, kind, specs[kind])

    def _remove_policy(self, pkind: str, policy_id: str) -> None:
        policy = self._policies[pkind].get(policy_id)
        if policy is None or self._bulk:
            self._policies[pkind].pop(policy_id, None)
            return
        self._clear_policy(policy)
        rel = self._relation_of(policy)
        rel.pids.discard(policy_id)
        rel.policy_groups.pop(policy_id, None)
        del self._policies[pkind][policy_id]

    def _clear_policy(self, policy: Policy) -> None:
        for kind in POLICY_KINDS[policy.pkind]:
            self._set_list(policy, kind, EMPTY_SPEC)

    def _set_list(self, policy: Policy, kind: str, spec: RoleSpec) -> None:
        """Apply one role list of a policy, re-evaluating it per class and per ``@id``."""
        old = policy.specs.get(kind, EMPTY_SPEC)
        if old == spec:
            return
        index = self._kinds[kind]
        old_classes = policy.classes[kind]
        new_classes = index.classes_matching(spec)
        index.reference(policy.pkind, policy.id, old, False)
        index.reference(policy.pkind, policy.id, spec, True)
        policy.specs[kind] = spec
        policy.classes[kind] = new_classes
        gained, lost = new_classes - old_classes, old_classes - new_classes
        for cls in gained:
            cls.pols.setdefault(policy.pkind, set()).add(policy.id)
        for cls in lost:
            cls.pols[policy.pkind].discard(policy.id)
        named = {e for e in spec.ids - old.ids if index.exists(e)}
        unnamed = {e for e in old.ids - spec.ids if index.exists(e)}
        rel = self._relation_of(policy)
        if kind == rel.a_kind:
            self._a_side_changed(rel, index, policy.id, gained, lost, named | unnamed)
        elif kind == rel.b_kind:
            self._b_side_changed(rel, policy.id, gained, lost, named, unnamed)
        if gained or lost or named or unnamed:
            self._changes.policy_list(policy, kind, gained | lost, named | unnamed)

    def _a_side_changed(
        self, rel: Relation, index: KindIndex, pid: str, gained: set[AttrClass], lost: set[AttrClass], renamed: set[str]
    ) -> None:
        b_side = self._b_side(rel, pid)
        for cls in gained:
            rel.class_gained(cls, pid, b_side)
        for cls in lost:
            rel.class_lost(cls, pid, b_side)
        for entity_id in renamed:
            self._place(rel, index, entity_id)

    def _b_side_changed(
        self, rel: Relation, pid: str, gained: set[AttrClass], lost: set[AttrClass], named: set[str], unnamed: set[str]
    ) -> None:
        changed = rel.b_classes_change(pid, gained, 1) + rel.b_classes_change(pid, lost, -1)
        changed += rel.b_ids_change(pid, named, 1) + rel.b_ids_change(pid, unnamed, -1)
        self._changes.b_groups(rel, changed)

    # -- helpers ------------------------------------------------------------------
    def _place(self, rel: Relation, index: KindIndex, entity_id: str) -> None:
        """Put an existing A entity into the group matching its class and ``@id`` policies."""
        cls = index.class_of[entity_id]
        extra = frozenset(index.naming(rel.pkind, entity_id) & rel.pids)
        desired = (cls.pols.get(rel.pkind, set()) & rel.pids) | extra
        rel.place(entity_id, cls, extra, desired, lambda pid: self._b_side(rel, pid))

    def _b_side(self, rel: Relation, pid: str) -> BSide:
        policy = self._policies[rel.pkind][pid]
        index = self._kinds[rel.b_kind]
        ids = [b for b in policy.specs.get(rel.b_kind, EMPTY_SPEC).ids if index.exists(b)]
        return policy.classes[rel.b_kind], ids

    def _relation_of(self, policy: Policy) -> Relation:
        if policy.pkind == SERVICE_POLICIES:
            return self._relations["bind" if policy.type == BIND else "dial"]
        if policy.pkind == EDGE_ROUTER_POLICIES:
            return self._relations["identityRouters"]
        return self._relations["serviceRouters"]

    @staticmethod
    def _pkinds_of(kind: str) -> list[str]:
        return [pkind for pkind, kinds in POLICY_KINDS.items() if kind in kinds]
