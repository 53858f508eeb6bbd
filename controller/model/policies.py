"""Service policies, edge router policies and service edge router policies.

Role lists are validated as the real controller does (``#all`` alone, ``#``/``@``
prefixes, existing ``@id``s), stored sorted, and rendered with ``*RolesDisplay``.
The policy engine follows the records through :class:`controller.policy.sync.PolicySync`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from controller import errors
from controller.entities import ENTITIES, role_lists_of
from controller.errors import ControllerError, FieldError
from controller.model.base import Attr, Core, EntityManager, name_field, set_field, snake
from controller.policy.kinds import (
    EDGE_ROUTER_POLICIES,
    IDENTITIES,
    SERVICE_EDGE_ROUTER_POLICIES,
    SERVICE_POLICIES,
    SERVICES,
)
from controller.policy.roles import ENTITY_PREFIX, normalize_semantic, validate_roles
from controller.store.query import Field

if TYPE_CHECKING:
    from controller.model.network import Network


class PolicyManager(EntityManager):
    """Shared behaviour of the three policy kinds."""

    pkind: str = ""
    #: (wire role-list name, engine kind)
    role_lists: tuple[tuple[str, str], ...] = ()

    def __init__(self, core: Core, *, network: Network):
        super().__init__(core)
        self.network = network

    def prepare(self, record: dict, old: dict | None, body: dict) -> None:
        if old is not None and old.get("is_system"):
            raise ControllerError(errors.ENTITY_CAN_NOT_BE_UPDATED, "system policies can not be updated")
        semantic = normalize_semantic(record.get("semantic"))
        if semantic is None:
            raise FieldError("semantic", "semantic in body should be one of [AllOf AnyOf]", record.get("semantic"))
        record["semantic"] = semantic
        record["is_system"] = False
        for wire, kind in self.role_lists:
            key = snake(wire)
            record[key] = validate_roles(record.get(key), wire, self.network.missing_ids(kind))

    def before_delete(self, record: dict) -> None:
        if record.get("is_system"):
            raise ControllerError(errors.ENTITY_CAN_NOT_BE_DELETED, "system policies can not be deleted")

    # -- entity deletion -----------------------------------------------------------
    def forget_entity(self, kind: str, entity_id: str) -> None:
        """Strip ``@entity_id`` from every role list of this kind naming it (never blocked)."""
        role = ENTITY_PREFIX + entity_id
        keys = [snake(wire) for wire, list_kind in self.role_lists if list_kind == kind]
        if not keys:
            return
        for policy_id in self.network.engine.policies_of(kind, entity_id, self.pkind):
            record = self.store.get(self.table, policy_id)
            if record is None or not any(role in (record.get(key) or ()) for key in keys):
                continue
            changed = {key: [r for r in record.get(key) or [] if r != role] for key in keys}
            self.store.put(self.table, policy_id, {**record, **changed, "updated_at": self._now()})

    def members(self, policy_id: str, kind: str) -> set[str]:
        return self.network.engine.policy_members(policy_id, kind, self.pkind)


def _members_field(name: str, kind: str, pkind: str, network: Network) -> Field:
    return Field(
        name, "set", lambda r: network.engine.policy_members(r["id"], kind, pkind), sortable=False, derived=True
    )


class ServicePolicyManager(PolicyManager):
    declaration = ENTITIES["service_policies"]
    pkind = SERVICE_POLICIES
    role_lists = role_lists_of("service_policies")
    attrs = (
        Attr("name"),
        Attr("type"),
        Attr("semantic"),
        Attr("identityRoles", default=list),
        Attr("serviceRoles", default=list),
        Attr("postureCheckRoles", default=list),
    )
    link_names = tuple(target.collection for target in declaration.role_targets)

    def __init__(self, core: Core, *, network: Network):
        self.filter_fields = (
            name_field(),
            Field("type", "string", lambda r: r.get("type")),
            Field("semantic", "string", lambda r: r.get("semantic")),
            Field("isSystem", "bool", lambda r: bool(r.get("is_system"))),
            set_field("identityRoles", "identity_roles"),
            set_field("serviceRoles", "service_roles"),
            set_field("postureCheckRoles", "posture_check_roles"),
            _members_field("identities", IDENTITIES, SERVICE_POLICIES, network),
            _members_field("services", SERVICES, SERVICE_POLICIES, network),
        )
        super().__init__(core, network=network)


class EdgeRouterPolicyManager(PolicyManager):
    declaration = ENTITIES["edge_router_policies"]
    pkind = EDGE_ROUTER_POLICIES
    role_lists = role_lists_of("edge_router_policies")
    attrs = (Attr("name"), Attr("semantic"), Attr("identityRoles", default=list), Attr("edgeRouterRoles", default=list))
    filter_fields = (
        name_field(),
        Field("semantic", "string", lambda r: r.get("semantic")),
        Field("isSystem", "bool", lambda r: bool(r.get("is_system"))),
        set_field("identityRoles", "identity_roles"),
        set_field("edgeRouterRoles", "edge_router_roles"),
    )
    link_names = tuple(target.collection for target in declaration.role_targets)

    def create_system(self, router_id: str) -> None:
        """The tunneler-enabled router's own policy: its identity may use it (section 2.5)."""
        now = self._now()
        self.store.put(
            self.table,
            router_id,
            {
                "id": router_id,
                "name": f"edge-router-{router_id}-system",
                "created_at": now,
                "updated_at": now,
                "tags": {},
                "semantic": "AnyOf",
                "identity_roles": ["@" + router_id],
                "edge_router_roles": ["@" + router_id],
                "is_system": True,
            },
        )


class ServiceEdgeRouterPolicyManager(PolicyManager):
    declaration = ENTITIES["service_edge_router_policies"]
    pkind = SERVICE_EDGE_ROUTER_POLICIES
    role_lists = role_lists_of("service_edge_router_policies")
    attrs = (Attr("name"), Attr("semantic"), Attr("serviceRoles", default=list), Attr("edgeRouterRoles", default=list))
    filter_fields = (
        name_field(),
        Field("semantic", "string", lambda r: r.get("semantic")),
        Field("isSystem", "bool", lambda r: bool(r.get("is_system"))),
        set_field("serviceRoles", "service_roles"),
        set_field("edgeRouterRoles", "edge_router_roles"),
    )
    link_names = tuple(target.collection for target in declaration.role_targets)
