"""Terminators: where a service is hosted (a router, a binding and an address)."""

from __future__ import annotations

from controller import errors
from controller.entities import ENTITIES
from controller.errors import ControllerError, NotFound
from controller.model.base import Attr, Core, EntityManager, scalar
from controller.model.service import ServiceManager
from controller.store.indexes import MultiIndex
from controller.store.query import Field

PRECEDENCES = ("default", "required", "failed")


class TerminatorManager(EntityManager):
    declaration = ENTITIES["terminators"]
    unique_names = False
    attrs = (
        Attr("service", key="service_id"),
        Attr("router", key="router_id"),
        Attr("address"),
        Attr("binding"),
        Attr("cost", default=0),
        Attr("identity", default=""),
        Attr("identitySecret", default=None, public=False),
        Attr("precedence", default="default"),
    )

    def __init__(self, core: Core, *, services: ServiceManager):
        store = core.store
        self.filter_fields = (
            scalar("binding", "string"),
            scalar("address", "string"),
            Field("instanceId", "string", lambda r: r.get("instance_id") or ""),
            Field("hostId", "string", lambda r: r.get("host_id") or ""),
            Field("sourceCtrl", "string", lambda r: r.get("source_ctrl") or ""),
            Field("service", "string", lambda r: r.get("service_id")),
            Field("router", "string", lambda r: r.get("router_id")),
            Field(
                "service.name",
                "string",
                lambda r: (store.get("services", r.get("service_id")) or {}).get("name"),
                derived=True,
            ),
            Field(
                "router.name",
                "string",
                lambda r: (store.get("routers", r.get("router_id")) or {}).get("name"),
                derived=True,
            ),
            scalar("cost", "int"),
            scalar("precedence", "string"),
            scalar("identity", "string"),
            Field("isSystem", "bool", lambda r: bool(r.get("is_system"))),
        )
        super().__init__(core)
        self.services = services
        self.by_service = MultiIndex(self.store, self.table, lambda r: r.get("service_id"))
        self.by_router = MultiIndex(self.store, self.table, lambda r: r.get("router_id"))

    def prepare(self, record: dict, old: dict | None, body: dict) -> None:
        if old is not None and old.get("is_system"):
            raise ControllerError(errors.ENTITY_CAN_NOT_BE_UPDATED, "system terminators are read only")
        self.require_ref(record, "service_id")
        self.require_ref(record, "router_id")
        record["cost"] = record.get("cost") or 0
        record["precedence"] = record.get("precedence") or "default"
        record["identity"] = record.get("identity") or ""

    def before_delete(self, record: dict) -> None:
        if record.get("is_system"):
            raise ControllerError(errors.ENTITY_CAN_NOT_BE_DELETED, "system terminators are read only")

    def create_system(self, terminator_id: str, service_id: str, router_id: str, **fields) -> None:
        """A router's own terminator (``binding: edge``, read only over REST), as the router reported it."""
        now = self._now()
        record = {
            "id": terminator_id,
            "created_at": now,
            "updated_at": now,
            "tags": {},
            "service_id": service_id,
            "router_id": router_id,
            "address": terminator_id,
            "binding": "edge",
            "is_system": True,
            "identity": fields.get("instance_id") or "",
            "identity_secret": None,
            **fields,
        }
        with self.store.lock, self.store.transaction():
            if self.services.find(service_id) is None:
                raise NotFound("service", service_id)
            self.store.insert(self.table, terminator_id, record)

    def delete_system(self, terminator_id: str) -> None:
        with self.store.lock, self.store.transaction():
            if self.find(terminator_id) is not None:
                self.store.delete(self.table, terminator_id)

    def delete_for_router(self, router: dict) -> None:
        for terminator_id in list(self.by_router.get(router["id"])):
            self.store.delete(self.table, terminator_id)

    def of_router(self, router_id: str) -> list[dict]:
        return [r for r in (self.find(t) for t in list(self.by_router.get(router_id))) if r]

    def of_service(self, service_id: str) -> list[dict]:
        return [r for r in (self.find(t) for t in self.by_service.get(service_id)) if r]
