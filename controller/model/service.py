"""Services: what identities dial and bind, with their configs and role attributes."""

from __future__ import annotations

from controller.entities import ENTITIES
from controller.errors import FieldError
from controller.model.base import Attr, Core, EntityManager, name_field, scalar, set_field
from controller.model.config import ConfigManager
from controller.policy.roles import validate_role_attributes
from controller.store.indexes import MultiIndex
from controller.store.query import Field

STRATEGIES = ("smartrouting", "weighted", "random", "ha")
DEFAULT_STRATEGY = "smartrouting"


class ServiceManager(EntityManager):
    declaration = ENTITIES["services"]
    attrs = (
        Attr("name"),
        Attr("configs", default=list),
        # NOTE(network): set at create only; PUT and PATCH ignore it like the real controller.
        Attr("encryptionRequired", default=False, on_update=False),
        Attr("maxIdleTimeMillis", default=0),
        Attr("roleAttributes", default=list),
        Attr("terminatorStrategy", default=DEFAULT_STRATEGY),
    )
    filter_fields = (
        name_field(),
        scalar("terminatorStrategy", "string"),
        Field("isFabricOnly", "bool", lambda r: False),
        Field("isSystem", "bool", lambda r: False),
        set_field("roleAttributes", "role_attributes"),
        set_field("configs", "configs"),
    )
    link_names = (
        "configs",
        "edge-routers",
        "identities",
        "service-edge-router-policies",
        "service-policies",
        "terminators",
    )

    def __init__(self, core: Core, *, configs: ConfigManager):
        super().__init__(core)
        self.configs = configs
        self.by_config = MultiIndex(self.store, self.table, lambda r: r.get("configs") or [], many=True)

    def prepare(self, record: dict, old: dict | None, body: dict) -> None:
        record["role_attributes"] = validate_role_attributes(record.get("role_attributes"))
        record["configs"] = self.configs.check_refs(record.get("configs"), "service")
        strategy = record.get("terminator_strategy") or DEFAULT_STRATEGY
        if strategy not in STRATEGIES:
            raise FieldError("terminatorStrategy", f"invalid terminator strategy '{strategy}'", strategy)
        record["terminator_strategy"] = strategy
        record["max_idle_time_millis"] = record.get("max_idle_time_millis") or 0
        record["encryption_required"] = bool(record.get("encryption_required"))
