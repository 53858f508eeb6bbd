"""Read side of the policy engine: lookups over its indexes.

Every query costs what it returns (plus the number of attribute classes or groups
involved), never the size of the network.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from controller.errors import FieldError
from controller.policy.index import EMPTY_SPEC, RoleSpec
from controller.policy.kinds import (
    BIND,
    DIAL,
    EDGE_ROUTERS,
    IDENTITIES,
    POLICY_KINDS,
    POSTURE_CHECKS,
    SERVICE_POLICIES,
    SERVICES,
    policy_type,
)
from controller.policy.roles import ALL_OF, ENTITY_PREFIX, REASON_PREFIX, ROLE_PREFIX, normalize_semantic

if TYPE_CHECKING:
    from controller.policy.relation import Relation


def locked(method):
    """Run a query under the engine lock, so it never sees a write half done."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)

    return wrapper


class PolicyQueries:
    """Queries of ``PolicyEngine`` (mixed in; uses its indexes read-only)."""

    _kinds: dict
    _policies: dict
    _relations: dict[str, Relation]
    _lock: object

    # -- identities and services ------------------------------------------------------
    @locked
    def services_for_identity(self, identity_id: str, type: str | None = None) -> set[str]:
        """Services the identity may Dial, Bind, or either (``type=None``)."""
        result: set[str] = set()
        for rel in self._service_relations(type):
            result |= rel.targets(identity_id)
        return result

    @locked
    def identities_for_service(self, service_id: str, type: str | None = None) -> set[str]:
        return self.identities_for_services([service_id], type)

    @locked
    def identities_for_services(self, service_ids: Iterable[str], type: str | None = None) -> set[str]:
        """Identities that may Dial/Bind any of the services (groups are expanded once)."""
        classes = self._kinds[SERVICES].class_of
        groups: set = set()
        for service_id in service_ids:
            for rel in self._service_relations(type):
                groups |= rel.source_groups(service_id, classes.get(service_id))
        result: set[str] = set()
        for group in groups:
            result |= group.ids
        return result

    @locked
    def permissions(self, identity_id: str, service_id: str) -> list[str]:
        """``["Bind", "Dial"]``, ``["Dial"]``, ``["Bind"]`` or ``[]`` (Bind first, as on the wire)."""
        cls = self._kinds[SERVICES].class_of.get(service_id)
        return [
            ptype
            for ptype, name in ((BIND, "bind"), (DIAL, "dial"))
            if self._relations[name].has(identity_id, service_id, cls)
        ]

    # -- edge routers -------------------------------------------------------------------
    @locked
    def edge_routers_for_identity(self, identity_id: str) -> set[str]:
        return self._relations["identityRouters"].targets(identity_id)

    @locked
    def identities_for_edge_router(self, er_id: str) -> set[str]:
        cls = self._kinds[EDGE_ROUTERS].class_of.get(er_id)
        return self._relations["identityRouters"].sources(er_id, cls)

    @locked
    def edge_routers_for_service(self, service_id: str) -> set[str]:
        return self._relations["serviceRouters"].targets(service_id)

    @locked
    def services_for_edge_router(self, er_id: str) -> set[str]:
        cls = self._kinds[EDGE_ROUTERS].class_of.get(er_id)
        return self._relations["serviceRouters"].sources(er_id, cls)

    @locked
    def usable_edge_routers(self, identity_id: str, service_id: str) -> set[str]:
        """Routers reachable by the identity (ERPs) and serving the service (SERPs)."""
        mine = self._relations["identityRouters"].group_of.get(identity_id)
        theirs = self._relations["serviceRouters"].group_of.get(service_id)
        if mine is None or theirs is None:
            return set()
        classes = self._kinds[EDGE_ROUTERS].class_of
        small, large = sorted((mine.cc, theirs.cc), key=len)
        result: set[str] = set()
        for cls in small:
            if cls in large:
                result |= cls.ids
        for er_id in mine.ce:
            if classes[er_id] in theirs.cc or er_id in theirs.ce:
                result.add(er_id)
        for er_id in theirs.ce:
            if classes[er_id] in mine.cc:
                result.add(er_id)
        return result

    @locked
    def advice(self, identity_id: str, service_id: str) -> dict[str, Any]:
        """Policy advice: access flags, router counts and the common routers."""
        permissions = self.permissions(identity_id, service_id)
        return {
            "isDialAllowed": DIAL in permissions,
            "isBindAllowed": BIND in permissions,
            "identityRouterCount": len(self.edge_routers_for_identity(identity_id)),
            "serviceRouterCount": len(self.edge_routers_for_service(service_id)),
            "commonRouterIds": sorted(self.usable_edge_routers(identity_id, service_id)),
        }

    # -- policies -------------------------------------------------------------------------
    @locked
    def service_policies_linking(self, identity_id: str, service_id: str, type: str | None = None) -> list[str]:
        """Service policies matching both the identity and the service, sorted by id."""
        linking = self.policies_of(IDENTITIES, identity_id, SERVICE_POLICIES)
        linking &= self.policies_of(SERVICES, service_id, SERVICE_POLICIES)
        policies, wanted = self._policies[SERVICE_POLICIES], policy_type(type)
        return sorted(pid for pid in linking if wanted is None or policies[pid].type == wanted)

    @locked
    def posture_checks_of_policy(self, policy_id: str) -> set[str]:
        return self.policy_members(policy_id, POSTURE_CHECKS, SERVICE_POLICIES)

    @locked
    def policy_members(self, policy_id: str, kind: str, policy_kind: str | None = None) -> set[str]:
        """Ids matched by one role list of a policy (``kind`` names the list)."""
        policy = self._find_policy(policy_id, kind, policy_kind)
        if policy is None:
            return set()
        index = self._kinds[kind]
        result = index.ids_of_classes(policy.classes[kind])
        result.update(e for e in policy.specs.get(kind, EMPTY_SPEC).ids if index.exists(e))
        return result

    @locked
    def policies_of(self, kind: str, entity_id: str, policy_kind: str) -> set[str]:
        """Policies of ``policy_kind`` whose ``kind`` list matches the entity."""
        return self._kinds[kind].policies_of(policy_kind, entity_id)

    @locked
    def policy_ids(self, policy_kind: str) -> set[str]:
        return set(self._policies[policy_kind])

    # -- entities and attributes ----------------------------------------------------------
    @locked
    def entity_ids(self, kind: str) -> set[str]:
        return set(self._kinds[kind].class_of)

    @locked
    def with_attribute(self, kind: str, attr: str) -> set[str]:
        return self._kinds[kind].with_attribute(attr)

    @locked
    def attributes(self, kind: str) -> list[str]:
        """Attributes carried by at least one entity of the kind, ascending."""
        return self._kinds[kind].attributes()

    @locked
    def role_filter(self, kind: str, roles: Iterable[str], semantic: str | None = ALL_OF) -> set[str]:
        """``roleFilter``: ``#attr`` matches under the semantic, plus existing ``@id``s.

        ``#all`` is an ordinary attribute here; other entries are rejected.
        """
        roles = list(roles)
        invalid = [r for r in roles if not (r.startswith(ROLE_PREFIX) or r.startswith(ENTITY_PREFIX))]
        if invalid:
            raise FieldError("roleFilter", REASON_PREFIX, invalid)
        normalized = normalize_semantic(semantic or ALL_OF)
        if normalized is None:
            raise FieldError("roleSemantic", "invalid semantic", semantic)
        index = self._kinds[kind]
        attrs = frozenset(r[1:] for r in roles if r.startswith(ROLE_PREFIX))
        result = index.ids_of_classes(index.classes_matching(RoleSpec(normalized, attrs)))
        result.update(r[1:] for r in roles if r.startswith(ENTITY_PREFIX) and index.exists(r[1:]))
        return result

    # -- helpers ---------------------------------------------------------------------------
    def _service_relations(self, type: str | None) -> list[Relation]:
        if type is None:
            return [self._relations["dial"], self._relations["bind"]]
        return [self._relations["bind" if policy_type(type) == BIND else "dial"]]

    def _find_policy(self, policy_id: str, kind: str, policy_kind: str | None):
        for pkind, kinds in POLICY_KINDS.items():
            if kind in kinds and (policy_kind is None or policy_kind == pkind):
                policy = self._policies[pkind].get(policy_id)
                if policy is not None:
                    return policy
        return None
