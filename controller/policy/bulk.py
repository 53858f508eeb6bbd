"""Bulk build of the policy engine's derived indexes (used when replaying the store).

Replaying a store through incremental upserts re-evaluates policies once per
entity. A bulk build instead takes every entity and policy as plain data first
(:meth:`PolicyEngine.bulk`), then computes the derived indexes in one pass per
policy and per relation, the same structures the incremental path maintains:

* per policy and kind: the classes its ``#`` entries match (and ``cls.pols``),
  plus the reverse role references;
* per relation: the A-side groups (one per class and ``@id`` naming set) with
  their policies and B-side counters.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from controller.policy.index import EMPTY_SPEC, KindIndex
from controller.policy.kinds import POLICY_KINDS
from controller.policy.relation import Group

if TYPE_CHECKING:
    from controller.policy.engine import Policy, PolicyEngine
    from controller.policy.relation import BSide, Relation


def place_entity(index: KindIndex, entity_id: str, attrs: frozenset[str] | None) -> None:
    """Put (or with ``None`` remove) an entity in its class, with no policy work."""
    old = index.class_of.get(entity_id)
    if old is not None and old.attrs == attrs:
        return
    new = None if attrs is None else index.get_class(attrs) or index.add_class(attrs)
    index.set_class(entity_id, new)
    if old is not None and not old.ids:
        index.drop_class(old)


def build(engine: PolicyEngine) -> None:
    """Compute every derived index from the loaded entities and policies (engine lock held)."""
    for kind, index in engine._kinds.items():
        pkinds = engine._pkinds_of(kind)
        for cls in index.classes.values():
            for pkind in pkinds:
                cls.pols.setdefault(pkind, set())
    for policies in engine._policies.values():
        for policy in policies.values():
            _match_policy(engine, policy)
    for rel in engine._relations.values():
        _build_groups(engine, rel)


def _match_policy(engine: PolicyEngine, policy: Policy) -> None:
    engine._relation_of(policy).pids.add(policy.id)
    for kind in POLICY_KINDS[policy.pkind]:
        index = engine._kinds[kind]
        spec = policy.specs.setdefault(kind, EMPTY_SPEC)
        index.reference(policy.pkind, policy.id, spec, True)
        policy.classes[kind] = index.classes_matching(spec)
        for cls in policy.classes[kind]:
            cls.pols[policy.pkind].add(policy.id)


def _build_groups(engine: PolicyEngine, rel: Relation) -> None:
    """Group every A entity by (class, ``@id`` policies) and attach the policies it matches."""
    index = engine._kinds[rel.a_kind]
    policies = engine._policies[rel.pkind]
    naming: dict[str, set[str]] = {}  # existing A entity -> policies of the relation naming it
    for pid in rel.pids:
        for entity_id in policies[pid].specs[rel.a_kind].ids:
            if index.exists(entity_id):
                naming.setdefault(entity_id, set()).add(pid)
    named = {entity_id: frozenset(pids) for entity_id, pids in naming.items()}
    b_sides = {pid: engine._b_side(rel, pid) for pid in rel.pids}
    groups = []
    for cls in index.classes.values():
        by_class = cls.pols.get(rel.pkind, set()) & rel.pids
        for extra, ids in _split(cls.ids, named).items():
            group = cls.groups.setdefault(rel.name, {})[extra] = Group(cls, extra)
            group.ids = ids
            groups.append(group)
            _attach_all(rel, group, by_class | extra, b_sides)
    # Filled key by key like the incremental path (dict.update of a big dict over-allocates it).
    rel.group_of = {entity_id: group for group in groups for entity_id in group.ids}


def _attach_all(rel: Relation, group: Group, pids: set[str], b_sides: dict[str, BSide]) -> None:
    """Count a new group's B classes and ids over all its policies at once (what ``_attach`` does one by one)."""
    cc: Counter = Counter()
    ce: Counter = Counter()
    for pid in pids:
        classes, ids = b_sides[pid]
        cc.update(classes)
        ce.update(ids)
        rel.policy_groups.setdefault(pid, set()).add(group)
    group.policies, group.cc, group.ce = set(pids), dict(cc), dict(ce)
    for cls in group.cc:
        rel.class_groups.setdefault(cls, set()).add(group)
    for entity_id in group.ce:
        rel.id_groups.setdefault(entity_id, set()).add(group)


def _split(ids: set[str], named: dict[str, frozenset[str]]) -> dict[frozenset[str], set[str]]:
    """A class's entities by the ``@id`` policies naming them (most are named by none)."""
    plain = set(ids)
    parts: dict[frozenset[str], set[str]] = {}
    for entity_id in ids & named.keys() if named else ():
        plain.discard(entity_id)
        parts.setdefault(named[entity_id], set()).add(entity_id)
    if plain:
        parts[frozenset()] = plain
    return parts
