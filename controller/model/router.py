"""Routers, edge routers and transit routers: one ``routers`` table, one name space.

Edge routers carry ``is_edge``, transit routers ``is_transit``; ``/routers`` shows
them all. Creating an edge or transit router makes its one-time enrollment; a
tunneler-enabled edge router owns an identity and a system edge router policy with
its id (model-semantics section 2.5). The ``routers`` manager is also the interface the
router enrollment code uses: ``find``, ``get``, ``find_by_fingerprint``, ``mark_enrolled``.
"""

from __future__ import annotations

from controller.entities import ENTITIES
from controller.errors import FieldError
from controller.model.base import Attr, Core, EntityManager, name_field, scalar, set_field
from controller.model.config import ConfigManager
from controller.model.enrollment import EnrollmentManager
from controller.model.identity import IdentityManager
from controller.model.policies import EdgeRouterPolicyManager
from controller.model.router_presence import RouterPresence
from controller.policy.roles import validate_role_attributes
from controller.store.change_context import ChangeContext
from controller.store.indexes import MultiIndex, UniqueIndex
from controller.store.query import Field, FieldSet


def router_id_of(enrollment: dict) -> str | None:
    return enrollment.get("edge_router_id") or enrollment.get("transit_router_id")


class Tunnelers:
    """A tunneler-enabled edge router's own identity and system edge router policy (section 2.5)."""

    def __init__(self, core: Core, *, identities: IdentityManager, edge_router_policies: EdgeRouterPolicyManager):
        self.store, self.cascades = core.store, core.cascades
        self.identities, self.edge_router_policies = identities, edge_router_policies

    def sync(self, record: dict, old: dict | None) -> None:
        """Create, rename or remove the router's identity and system policy with the flag."""
        enabled, was = record.get("is_tunneler_enabled"), bool(old and old.get("is_tunneler_enabled"))
        router_id, identities = record["id"], self.identities
        if enabled and not was:
            if self.store.get("identities", router_id) is None:
                identities.create_system({"id": router_id, "name": record["name"], "type_id": "Router"})
            self.edge_router_policies.create_system(router_id)
        elif was and not enabled:
            self.remove(router_id)
        elif enabled and old and old["name"] != record["name"]:
            holder = identities.names.get(record["name"])
            if holder not in (None, router_id):
                raise FieldError(
                    "name", f"duplicate value '{record['name']}' in unique index on identities store", record["name"]
                )
            identities.touch(router_id, name=record["name"])

    def remove(self, router_id: str) -> None:
        self.store.delete("edge_router_policies", router_id)
        identity = self.store.get("identities", router_id)
        if identity is not None and identity.get("type_id") == "Router":
            self.cascades.run("identities", identity)
            self.store.delete("identities", router_id)


class RouterManager(EntityManager):
    """Every router (``/routers``); subclasses narrow to one kind."""

    declaration = ENTITIES["routers"]
    #: record flag of this manager's kind (None: every router)
    kind_flag: str | None = None
    enrollment_method: str | None = None
    attrs = (
        Attr("name"),
        Attr("cost", default=0),
        Attr("disabled", default=False),
        Attr("noTraversal", default=False),
        Attr("configs", default=list),
        Attr("ctrlChanListeners", default=dict),
    )
    filter_fields = (
        name_field(),
        scalar("fingerprint", "string"),
        scalar("cost", "int"),
        Field("noTraversal", "bool", lambda r: bool(r.get("no_traversal"))),
        Field("disabled", "bool", lambda r: bool(r.get("disabled"))),
        Field("isSystem", "bool", lambda r: False),
        set_field("configs", "configs"),
    )

    def __init__(
        self,
        core: Core,
        *,
        presence: RouterPresence,
        configs: ConfigManager,
        enrollments: EnrollmentManager,
        tunnelers: Tunnelers,
        routers: RouterManager | None = None,
    ):
        """``routers``: the all-routers manager, whose indexes the edge and transit managers share."""
        self.filter_fields = (*self.filter_fields, Field("connected", "bool", lambda r: presence.is_online(r["id"])))
        super().__init__(core)
        self.presence, self.configs, self.enrollments, self.tunnelers = presence, configs, enrollments, tunnelers
        self.routers = routers if routers is not None else self
        flag = self.kind_flag
        self.of_kind = MultiIndex(self.store, self.table, lambda r: True if flag is None or r.get(flag) else None)
        if self.kind_flag is None:
            self.by_fingerprint = UniqueIndex(self.store, self.table, lambda r: r.get("fingerprint"))
            self.enrollment_ids = MultiIndex(self.store, "enrollments", router_id_of)

    # -- reads --------------------------------------------------------------------
    def find(self, entity_id: str) -> dict | None:
        record = super().find(entity_id)
        if record is None or (self.kind_flag and not record.get(self.kind_flag)):
            return None
        return record

    def list(self, args: dict, *, candidates=None, extra=None):
        if candidates is None and self.kind_flag is not None:
            candidates = [r for r in map(self.find, self.of_kind.get(True)) if r]
        return super().list(args, candidates=candidates, extra=extra)

    def find_by_fingerprint(self, fingerprint: str) -> dict | None:
        router_id = self.routers.by_fingerprint.get(fingerprint)
        return self.routers.find(router_id) if router_id else None

    def enrollment_of(self, router_id: str) -> dict | None:
        records = [self.store.get("enrollments", e) for e in self.routers.enrollment_ids.get(router_id)]
        records = [r for r in records if r]
        return max(records, key=lambda r: r["created_at"]) if records else None

    # -- writes -------------------------------------------------------------------
    def new_id(self, body: dict) -> str:
        """A router created on ``/routers`` keeps the id its creator gives (the fabric API's create requires one)."""
        wanted = body.get("id") if self.kind_flag is None else None
        if not wanted:
            return super().new_id(body)
        if self.store.get(self.table, wanted) is not None:
            raise FieldError("id", "a router with this id already exists", wanted)
        return wanted

    def prepare(self, record: dict, old: dict | None, body: dict) -> None:
        if old is None:
            record.update(
                is_edge=self.kind_flag == "is_edge",
                is_transit=self.kind_flag == "is_transit",
                is_verified=False,
                fingerprint=None,
                cert_pem=None,
            )
        record["cost"] = record.get("cost") or 0
        record["disabled"] = bool(record.get("disabled"))
        record["no_traversal"] = bool(record.get("no_traversal"))
        record["configs"] = self.configs.check_refs(record.get("configs"), "router")
        record["ctrl_chan_listeners"] = record.get("ctrl_chan_listeners") or {}

    def after_create(self, record: dict, body: dict) -> None:
        if self.enrollment_method:
            self.enrollments.create_for_router(record["id"], self.enrollment_method)

    def after_update(self, record: dict, old: dict, body: dict) -> None:
        if record.get("is_edge"):
            self.tunnelers.sync(record, old)

    def mark_enrolled(
        self,
        router_id: str,
        cert_pem: str,
        fingerprint: str,
        server_cert_pem: str,
        *,
        context: ChangeContext | None = None,
    ) -> None:
        """Enrollment or extension succeeded: the router is verified with this certificate."""
        self.routers.touch(
            router_id,
            context=context,
            is_verified=True,
            fingerprint=fingerprint,
            cert_pem=cert_pem,
            server_cert_pem=server_cert_pem,
        )

    def re_enroll(self, router_id: str, *, context: ChangeContext | None = None) -> None:
        """A fresh enrollment; the certificate is forgotten and the router unverified."""
        with self.store.lock, self.store.transaction(context):
            record = self.get(router_id)
            method = "erott" if record.get("is_edge") else "trott"
            self.enrollments.create_for_router(router_id, method)
            self.routers.touch(router_id, is_verified=False, fingerprint=None, cert_pem=None, server_cert_pem=None)

    def delete_dependents(self, record: dict) -> None:
        """Cascade of a router delete: its tunneler identity and policy (the rest is declared)."""
        if record.get("is_edge"):
            self.tunnelers.remove(record["id"])


class TransitRouterManager(RouterManager):
    declaration = ENTITIES["transit_routers"]
    kind_flag = declaration.flag
    enrollment_method = "trott"


class EdgeRouterManager(RouterManager):
    declaration = ENTITIES["edge_routers"]
    kind_flag = declaration.flag
    enrollment_method = "erott"
    attrs = (
        *RouterManager.attrs,
        Attr("appData", default=dict),
        Attr("isTunnelerEnabled", default=False),
        Attr("roleAttributes", default=list),
    )
    filter_fields = (
        *RouterManager.filter_fields,
        Field("isVerified", "bool", lambda r: bool(r.get("is_verified"))),
        Field("isTunnelerEnabled", "bool", lambda r: bool(r.get("is_tunneler_enabled"))),
        set_field("roleAttributes", "role_attributes"),
    )
    link_names = ("edge-router-policies", "identities", "service-edge-router-policies", "services")

    def __init__(self, core: Core, **collaborators):
        super().__init__(core, **collaborators)
        presence = self.presence
        self.fields = FieldSet((*self.filter_fields, Field("online", "bool", lambda r: presence.is_online(r["id"]))))

    def prepare(self, record: dict, old: dict | None, body: dict) -> None:
        super().prepare(record, old, body)
        record["role_attributes"] = validate_role_attributes(record.get("role_attributes"))
        record["is_tunneler_enabled"] = bool(record.get("is_tunneler_enabled"))
        record["app_data"] = record.get("app_data") or {}

    def after_create(self, record: dict, body: dict) -> None:
        super().after_create(record, body)
        self.tunnelers.sync(record, None)
