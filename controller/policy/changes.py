"""Which identities a change may affect, collected during one engine write.

Listeners get the identities whose services, routers, permissions or posture
requirements may have changed. The set is a safe over-approximation; it is built
only when a listener exists, and expanded from classes, groups and policies once
per write, so large policies cost one pass over their members.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from controller.policy.kinds import IDENTITIES, SERVICE_EDGE_ROUTER_POLICIES, SERVICE_POLICIES, SERVICES

if TYPE_CHECKING:
    from controller.policy.engine import Policy, PolicyEngine
    from controller.policy.index import AttrClass
    from controller.policy.relation import Group, Relation


class ChangeTracker:
    """Pending effects of the current write; ``collect`` hands them over once it is done."""

    def __init__(self, engine: PolicyEngine):
        self.engine = engine
        self.enabled = False
        self._reset()

    def _reset(self) -> None:
        self.identities: set[str] = set()
        self.services: set[str] = set()  # services whose usable routers may have changed
        self.classes: list[AttrClass] = []  # identity classes, expanded on flush
        self.groups: list[Group] = []  # identity groups, expanded on flush
        self.policies: set[tuple[str, str]] = set()  # (policy kind, id): all its identities

    # -- recording ------------------------------------------------------------------
    def entity_after(self, kind: str, entity_id: str, before: dict[str, set[str]], after: dict[str, set[str]]) -> None:
        """An entity was created, re-classed or deleted; ``before``/``after`` are its policies."""
        if not self.enabled:
            return
        for pkind in before:
            diff = before[pkind] ^ after[pkind]
            if not diff:
                continue
            if kind == IDENTITIES:
                self.identities.add(entity_id)
            elif kind == SERVICES and pkind == SERVICE_EDGE_ROUTER_POLICIES:
                self.services.add(entity_id)
            else:
                self.policies.update((pkind, pid) for pid in diff)

    def policy_list(self, policy: Policy, kind: str, classes: Iterable[AttrClass], ids: Iterable[str]) -> None:
        """One role list of a policy changed its matches (classes and ``@id`` entities)."""
        if not self.enabled:
            return
        if kind == IDENTITIES:
            self.classes.extend(classes)
            self.identities.update(ids)
        elif policy.pkind == SERVICE_EDGE_ROUTER_POLICIES and kind == SERVICES:
            for cls in classes:
                self.services |= cls.ids
            self.services.update(ids)
        elif policy.pkind == SERVICE_POLICIES:
            # Services or posture checks changed: every identity of the policy is affected.
            self.policies.add((policy.pkind, policy.id))
        # Router lists of ERPs/SERPs are reported through b_groups (actual pair changes).

    def b_groups(self, rel: Relation, groups: list[Group]) -> None:
        """Groups of a relation whose targets changed."""
        if not self.enabled or not groups:
            return
        if rel.a_kind == IDENTITIES:
            self.groups.extend(groups)
        else:
            for group in groups:
                self.services |= group.ids

    # -- reporting ------------------------------------------------------------------
    def collect(self) -> set[str]:
        """The identities affected by the current write (empty without listeners); then reset."""
        if not self.enabled:
            return set()
        affected = self._expand()
        self._reset()
        return affected

    def _expand(self) -> set[str]:
        engine = self.engine
        affected = set(self.identities)
        for cls in self.classes:
            affected |= cls.ids
        for group in self.groups:
            affected |= group.ids
        services = set(self.services)
        for pkind, pid in self.policies:
            if pid not in engine._policies[pkind]:
                continue  # removed: its identities were reported when its lists were cleared
            if pkind == SERVICE_EDGE_ROUTER_POLICIES:
                services |= engine.policy_members(pid, SERVICES, pkind)
            else:
                affected |= engine.policy_members(pid, IDENTITIES, pkind)
        affected |= engine.identities_for_services(services)
        return affected
