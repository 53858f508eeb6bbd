"""Self-check of the policy engine's indexes (for tests and debugging).

Recomputes every derived counter of the engine from its own primary data (entity
classes and parsed role lists) and reports each mismatch, including leaks such as
counters left behind for classes or groups that no longer exist.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from controller.policy.index import EMPTY_SPEC

if TYPE_CHECKING:
    from controller.policy.engine import PolicyEngine
    from controller.policy.index import KindIndex
    from controller.policy.relation import Relation


def problems(engine: PolicyEngine) -> list[str]:
    """Every inconsistency found; empty when the indexes are sound."""
    found: list[str] = []
    with engine._lock:
        for index in engine._kinds.values():
            found += _kind_problems(engine, index)
        for rel in engine._relations.values():
            found += _relation_problems(engine, rel)
    return found


def _kind_problems(engine: PolicyEngine, index: KindIndex) -> list[str]:
    found = []
    live = set(index.classes.values())
    for attrs, cls in index.classes.items():
        if cls.attrs != attrs or not cls.ids:
            found.append(f"{index.kind}: class {sorted(attrs)} is empty or mis-keyed")
        if any(index.class_of.get(e) is not cls for e in cls.ids):
            found.append(f"{index.kind}: class {sorted(attrs)} holds entities of another class")
    if set(index.class_of.values()) - live:
        found.append(f"{index.kind}: entities point to dropped classes")
    by_attr = {attr: {c for c in live if attr in c.attrs} for attr in {a for c in live for a in c.attrs}}
    if by_attr != index.by_attr:
        found.append(f"{index.kind}: attribute index out of step")
    for pkind, policies in engine._policies.items():
        for policy in policies.values():
            if index.kind not in policy.classes:
                continue
            spec = policy.specs.get(index.kind, EMPTY_SPEC)
            expected = {c for c in live if spec.matches_attrs(c.attrs)}
            if policy.classes[index.kind] != expected:
                found.append(f"{index.kind}: classes of {pkind} {policy.id} out of step")
            for cls in live:
                if (policy.id in cls.pols.get(pkind, ())) != (cls in expected):
                    found.append(f"{index.kind}: class {sorted(cls.attrs)} policies miss {policy.id}")
    return found


def _relation_problems(engine: PolicyEngine, rel: Relation) -> list[str]:
    found = []
    a_index, b_index = engine._kinds[rel.a_kind], engine._kinds[rel.b_kind]
    policies = engine._policies[rel.pkind]
    expected_pids = {pid for pid, p in policies.items() if engine._relation_of(p) is rel}
    if rel.pids != expected_pids:
        found.append(f"{rel.name}: policy ids out of step")
    groups = {id(g): g for g in rel.group_of.values()}.values()
    if set(rel.group_of) != set(a_index.class_of):
        found.append(f"{rel.name}: grouped entities differ from existing ones")
    class_groups, id_groups, policy_groups = {}, {}, {}
    for group in groups:
        found += _group_problems(rel, group, a_index, b_index, policies)
        for cls in group.cc:
            class_groups.setdefault(cls, set()).add(group)
        for b in group.ce:
            id_groups.setdefault(b, set()).add(group)
        for pid in group.policies:
            policy_groups.setdefault(pid, set()).add(group)
    if class_groups != rel.class_groups or id_groups != rel.id_groups:
        found.append(f"{rel.name}: reverse pair indexes out of step")
    if policy_groups != {pid: gs for pid, gs in rel.policy_groups.items() if gs}:
        found.append(f"{rel.name}: policy -> groups index out of step")
    return found


def _group_problems(rel, group, a_index, b_index, policies) -> list[str]:
    found = []
    name = f"{rel.name}: group {group!r}"
    if group.cls.groups.get(rel.name, {}).get(group.extra) is not group:
        found.append(f"{name} not registered in its class")
    for a in group.ids:
        extra = frozenset(a_index.naming(rel.pkind, a) & rel.pids)
        if rel.group_of.get(a) is not group or a_index.class_of.get(a) is not group.cls or extra != group.extra:
            found.append(f"{name} holds {a} wrongly")
    desired = (group.cls.pols.get(rel.pkind, set()) & rel.pids) | group.extra
    if group.policies != desired:
        found.append(f"{name} policies {sorted(group.policies)} != {sorted(desired)}")
    cc, ce = Counter(), Counter()
    for pid in group.policies:
        policy = policies[pid]
        cc.update(policy.classes[rel.b_kind])
        ce.update(b for b in policy.specs.get(rel.b_kind, EMPTY_SPEC).ids if b_index.exists(b))
    if dict(cc) != group.cc or dict(ce) != group.ce:
        found.append(f"{name} counters out of step")
    return found
