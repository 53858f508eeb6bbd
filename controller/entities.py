"""Every entity, declared once: its names in every casing, its references and role lists.

Pure data, imported by both the controller and the harness. From it derive:

* the managers' ``table``, ``collection``, ``entity`` and ``label`` (``EntityManager.declaration``),
* the route entries' operationIds and paths (``controller/api/crud.py``),
* the delete cascades that only delete, clear or unlist (``controller/model/cascades.py``),
* the integrity check's references (``controller/ops/integrity.py``),
* the ``@id`` checks of role lists (:data:`ROLE_TARGETS`) and of references (``EntityManager.require_ref``),
* the policies' member listings and links, the role-filtered listings,
* the harness's networks-as-code kinds (``harness/client/kinds.py``).

Adding an entity starts here: one :class:`Entity` in :data:`ENTITIES`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

#: what deleting the target does to a record referencing it
CASCADE = "cascade"  # the referencing record is deleted too (its own cascades run)
CLEAR = "clear"  # the field is set to ``cleared``
REMOVE_ITEM = "remove-item"  # the id is removed from the list field
REFUSE = "refuse"  # the target's manager refuses the delete while referenced (409)

#: what the integrity fix does to a dangling reference
DELETE = "delete"
_REPAIR = {CASCADE: DELETE, CLEAR: CLEAR, REMOVE_ITEM: REMOVE_ITEM}

#: the real controller stores identity types User, Device and Service as Default
IDENTITY_STORED_TYPE = {
    "User": "Default",
    "Device": "Default",
    "Service": "Default",
    "Default": "Default",
    "Router": "Router",
}


def camel(snake_name: str) -> str:
    """``posture_checks`` -> ``postureChecks``."""
    head, *rest = snake_name.split("_")
    return head + "".join(part.title() for part in rest)


def kebab(pascal_name: str) -> str:
    """``EdgeRouter`` -> ``edge-router``."""
    return "".join("-" + c.lower() if c.isupper() else c for c in pascal_name).lstrip("-")


@dataclass(frozen=True)
class Ref:
    """Record field ``field`` (dotted when nested) names a record of entity ``target``."""

    field: str
    target: str
    on_delete: str = CASCADE
    #: the field holds a list of ids
    many: bool = False
    #: the value CLEAR writes
    cleared: object = None
    #: the registered cascade (``Class.method``) doing real work instead of the derived rule
    hook: str = ""
    #: integrity repair of a dangling reference when on_delete is REFUSE (DELETE, CLEAR or REMOVE_ITEM)
    repair: str = ""
    #: wire name of the field, when networks-as-code names the target instead (``authPolicyId``)
    wire: str = ""

    @property
    def fix(self) -> str:
        """What the integrity fix does when the target is missing."""
        return self.repair or _REPAIR[self.on_delete]

    @property
    def derived(self) -> bool:
        """True when the cascade is the generic rule (no hook, and not a refusal)."""
        return not self.hook and self.on_delete != REFUSE


@dataclass(frozen=True)
class Entity:
    """One entity: ``key`` is its snake_case plural, the controller's manager attribute."""

    key: str
    #: wire singular and plural, as in operationIds (``createIdentity``, ``listIdentities``)
    singular: str
    plural: str = ""
    table: str = ""
    #: path under the API (``/identities``) and the ``entity`` of its references
    collection: str = ""
    entity: str = ""
    #: lowerCamel name in error messages (``identity``)
    label: str = ""
    refs: tuple[Ref, ...] = ()
    #: role-list wire name -> key of the entity whose ``@id``s it holds
    roles: dict[str, str] = field(default_factory=dict)
    #: record flag marking this entity's records in a shared table (edge routers among routers)
    flag: str | None = None
    #: False for tables no operation serves (their records belong to another entity)
    served: bool = True

    def __post_init__(self):
        defaults = {
            "plural": self.singular + "s",
            "table": self.key,
            "collection": self.key.replace("_", "-"),
            "label": self.singular[:1].lower() + self.singular[1:],
        }
        for name, value in defaults.items():
            if not getattr(self, name):
                object.__setattr__(self, name, value)
        if not self.entity:
            object.__setattr__(self, "entity", self.collection)

    @property
    def kind(self) -> str:
        """The camelCase plural: networks-as-code key and policy-engine kind (``edgeRouters``)."""
        return camel(self.key)

    @property
    def role_targets(self) -> list[Entity]:
        """The entities this policy's role lists name, by collection (its sub-resource listings)."""
        return sorted((ENTITIES[key] for key in self.roles.values()), key=lambda target: target.collection)

    def owns(self, record: dict | None) -> bool:
        """True when ``record`` (from this entity's table) is one of this entity's."""
        return record is not None and (self.flag is None or bool(record.get(self.flag)))

    def ref(self, field_name: str) -> Ref:
        """The declared reference held in ``field_name``."""
        return next(ref for ref in self.refs if ref.field == field_name)

    def op_id(self, verb: str) -> str:
        """``op_id("list")`` -> ``listIdentities``; other verbs take the singular."""
        return f"{verb}{self.plural if verb == 'list' else self.singular}"


ENTITIES: dict[str, Entity] = {
    e.key: e
    for e in (
        Entity(
            "identities",
            "Identity",
            "Identities",
            refs=(
                Ref("auth_policy_id", "auth_policies", REFUSE, repair=CLEAR, wire="authPolicyId"),
                Ref("type_id", "identity_types", REFUSE, repair=CLEAR, cleared="Default"),
            ),
        ),
        Entity("identity_types", "IdentityType"),
        Entity(
            "identity_service_configs",
            "IdentityServiceConfig",
            served=False,
            refs=(
                Ref("identity_id", "identities"),
                Ref("service_id", "services"),
                Ref("config_id", "configs", REFUSE, repair=DELETE),
            ),
        ),
        Entity(
            "authenticators",
            "Authenticator",
            refs=(Ref("identity_id", "identities"), Ref("ca_id", "cas", hook="CaManager.delete_dependents")),
        ),
        Entity(
            "enrollments",
            "Enrollment",
            refs=(
                Ref("identity_id", "identities"),
                Ref("ca_id", "cas"),
                Ref("edge_router_id", "routers"),
                Ref("transit_router_id", "routers"),
            ),
        ),
        Entity(
            "auth_policies",
            "AuthPolicy",
            "AuthPolicies",
            refs=(
                Ref("primary.ext_jwt.allowed_signers", "external_jwt_signers", REFUSE, many=True, repair=REMOVE_ITEM),
                Ref("secondary.require_ext_jwt_signer", "external_jwt_signers", REFUSE, repair=CLEAR),
            ),
        ),
        Entity(
            "api_sessions",
            "APISessions",
            "APISessions",
            label="apiSession",
            refs=(Ref("identity_id", "identities", hook="ApiSessionManager.delete_for_identity"),),
        ),
        Entity(
            "api_session_certificates",
            "CurrentApiSessionCertificate",
            collection="current-api-session/certificates",
            entity="api-session-certificates",
            label="apiSessionCertificate",
            refs=(Ref("api_session_id", "api_sessions"),),
        ),
        Entity("mfas", "Mfa", refs=(Ref("identity_id", "identities"),)),
        Entity("cas", "Ca"),
        Entity("external_jwt_signers", "ExternalJwtSigner"),
        Entity("revocations", "Revocation"),
        Entity("controller_settings", "ControllerSetting"),
        # -- the network model
        Entity("config_types", "ConfigType"),
        Entity(
            "configs",
            "Config",
            refs=(Ref("config_type_id", "config_types", REFUSE, repair=DELETE, wire="configTypeId"),),
        ),
        Entity("services", "Service", refs=(Ref("configs", "configs", REMOVE_ITEM, many=True, wire="configs"),)),
        Entity("routers", "Router", refs=(Ref("configs", "configs", REMOVE_ITEM, many=True, wire="configs"),)),
        Entity("edge_routers", "EdgeRouter", table="routers", flag="is_edge"),
        Entity("transit_routers", "TransitRouter", table="routers", flag="is_transit"),
        Entity("terminators", "Terminator", refs=(Ref("service_id", "services"), Ref("router_id", "routers"))),
        Entity(
            "sessions",
            "Session",
            refs=(
                Ref("api_session_id", "api_sessions"),
                # NOTE: they go with the identity's API sessions
                Ref("identity_id", "identities", hook="ApiSessionManager.delete_for_identity"),
                Ref("service_id", "services"),
            ),
        ),
        Entity("posture_checks", "PostureCheck"),
        Entity("posture_check_types", "PostureCheckType"),
        Entity(
            "service_policies",
            "ServicePolicy",
            "ServicePolicies",
            roles={"identityRoles": "identities", "serviceRoles": "services", "postureCheckRoles": "posture_checks"},
        ),
        Entity(
            "edge_router_policies",
            "EdgeRouterPolicy",
            "EdgeRouterPolicies",
            roles={"identityRoles": "identities", "edgeRouterRoles": "edge_routers"},
        ),
        Entity(
            "service_edge_router_policies",
            "ServiceEdgeRouterPolicy",
            "ServiceEdgeRouterPolicies",
            roles={"serviceRoles": "services", "edgeRouterRoles": "edge_routers"},
        ),
    )
}

# -- derived views -------------------------------------------------------------------


def references() -> list[tuple[str, Ref]]:
    """Every reference as ``(referencing table, ref)``."""
    return [(entity.table, ref) for entity in ENTITIES.values() for ref in entity.refs]


def target_table(ref: Ref) -> str:
    """The table holding what ``ref`` names."""
    return ENTITIES[ref.target].table


def role_references() -> list[tuple[str, str, Entity]]:
    """Every role list as ``(policy table, role wire name, target entity)``."""
    return [
        (entity.table, wire, ENTITIES[target]) for entity in ENTITIES.values() for wire, target in entity.roles.items()
    ]


#: policy-engine kind (``edgeRouters``) -> the entity whose ``@id``s role lists hold
ROLE_TARGETS: dict[str, Entity] = {target.kind: target for _, _, target in role_references()}


def role_lists_of(key: str) -> tuple[tuple[str, str], ...]:
    """A policy entity's role lists as ``(wire name, engine kind)``, in declared order."""
    return tuple((wire, ENTITIES[target].kind) for wire, target in ENTITIES[key].roles.items())


@dataclass(frozen=True)
class Relation:
    """Records of ``target`` the policy engine relates to one record of ``owner``: ``/<owner>/{id}/<target>``."""

    op_id: str
    owner: str
    target: str
    #: the engine's answer: ``query(engine, owner_id, policy_type)`` -> ids (policy_type: "Dial"/"Bind"/None)
    query: Callable
    summary: str
    #: honours ``policyType=dial|bind``
    policy_type: bool = False

    @property
    def path(self) -> str:
        return f"/{ENTITIES[self.owner].collection}/{{id}}/{ENTITIES[self.target].collection}"


def _policies_of(owner: str, policies: str) -> Callable:
    owner_kind, policy_kind = ENTITIES[owner].kind, ENTITIES[policies].kind
    return lambda engine, owner_id, _: engine.policies_of(owner_kind, owner_id, policy_kind)


def _policies_relation(op_id: str, owner: str, policies: str, label: str) -> Relation:
    summary = f"List the {ENTITIES[policies].collection.replace('-', ' ')} matching {label}"
    return Relation(op_id, owner, policies, _policies_of(owner, policies), summary)


#: every engine-backed relation by operationId (``controller/api/relations.py`` serves them)
RELATIONS: dict[str, Relation] = {
    r.op_id: r
    for r in (
        _policies_relation("listIdentitysEdgeRouterPolicies", "identities", "edge_router_policies", "an identity"),
        _policies_relation("listIdentityServicePolicies", "identities", "service_policies", "an identity"),
        _policies_relation(
            "listEdgeRouterEdgeRouterPolicies", "edge_routers", "edge_router_policies", "an edge router"
        ),
        _policies_relation(
            "listEdgeRouterServiceEdgeRouterPolicies", "edge_routers", "service_edge_router_policies", "an edge router"
        ),
        _policies_relation(
            "listServiceServiceEdgeRouterPolicies", "services", "service_edge_router_policies", "a service"
        ),
        _policies_relation("listServiceServicePolicies", "services", "service_policies", "a service"),
        Relation(
            "listIdentityEdgeRouters",
            "identities",
            "edge_routers",
            lambda engine, owner_id, _: engine.edge_routers_for_identity(owner_id),
            "List the edge routers an identity may use (edge router policies)",
        ),
        Relation(
            "listServiceEdgeRouters",
            "services",
            "edge_routers",
            lambda engine, owner_id, _: engine.edge_routers_for_service(owner_id),
            "List the edge routers serving a service (service edge router policies)",
        ),
        Relation(
            "listServiceIdentities",
            "services",
            "identities",
            lambda engine, owner_id, policy_type: engine.identities_for_service(owner_id, policy_type),
            "List the identities that may dial or bind a service",
            policy_type=True,
        ),
        Relation(
            "listEdgeRouterIdentities",
            "edge_routers",
            "identities",
            lambda engine, owner_id, _: engine.identities_for_edge_router(owner_id),
            "List the identities that may use an edge router",
        ),
        Relation(
            "listEdgeRouterServices",
            "edge_routers",
            "services",
            lambda engine, owner_id, _: engine.services_for_edge_router(owner_id),
            "List the services an edge router serves",
        ),
    )
}
