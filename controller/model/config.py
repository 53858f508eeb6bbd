"""Configs: named data of one config type, validated against the type's schema."""

from __future__ import annotations

from typing import Callable

from controller.entities import ENTITIES
from controller.errors import FieldError, ReferenceExists
from controller.model.base import Attr, Core, EntityManager, name_field
from controller.model.config_type import ConfigTypeManager
from controller.model.validation import validator_for
from controller.store.indexes import MultiIndex
from controller.store.query import Field


def validate_data(schema: dict, data) -> None:
    """The first violation of ``schema`` by ``data`` as a 400 (``(root)`` for the top level)."""
    if not schema:
        return
    errors = sorted(
        validator_for(schema).iter_errors(data), key=lambda e: (len(e.absolute_path), str(list(e.absolute_path)))
    )
    if not errors:
        return
    error = errors[0]
    path = ".".join(str(part) for part in error.absolute_path)
    field = path or "(root)"
    raise FieldError(field, f"{field}: {error.message}", error.instance)


class ConfigManager(EntityManager):
    declaration = ENTITIES["configs"]
    attrs = (Attr("name"), Attr("configTypeId", on_update=False), Attr("data", default=dict))
    filter_fields = (
        name_field(),
        Field("type", "string", lambda r: r.get("config_type_id")),
        Field("isSystem", "bool", lambda r: bool(r.get("is_system"))),
    )

    def __init__(
        self, core: Core, *, config_types: ConfigTypeManager, identities_using_config: Callable[[str], set[str]]
    ):
        """``identities_using_config`` reaches the identity overrides, built after (they name configs)."""
        super().__init__(core)
        self.config_types, self.identities_using_config = config_types, identities_using_config
        self.by_type = MultiIndex(self.store, self.table, lambda r: r.get("config_type_id"))

    def prepare(self, record: dict, old: dict | None, body: dict) -> None:
        type_id = record.get("config_type_id")
        config_type = self.config_types.find(type_id) if isinstance(type_id, str) else None
        if config_type is None:
            raise FieldError("type", "invalid config type", type_id)
        data = record.get("data")
        if not isinstance(data, dict):
            raise FieldError("data", "data in body is required and must be an object", data)
        validate_data(config_type.get("schema") or {}, data)

    def before_delete(self, record: dict) -> None:
        # NOTE(network): the real controller fails this delete with a 500; the documented 409 is kept here.
        users = self.identities_using_config(record["id"])
        if users:
            raise ReferenceExists("serviceConfigs", sorted(users))

    def check_refs(self, config_ids, target: str, field: str = "configs") -> list[str]:
        """Config ids of a service or router: existing (404), of ``target`` types, one per type (400)."""
        seen: dict[str, str] = {}
        out = []
        for config_id in config_ids or []:
            if config_id in out:
                continue
            config = self.get(config_id)
            config_type = self.type_of(config) or {}
            if (config_type.get("target") or "service") != target:
                raise FieldError(field, f"config {config_id} is of a type that does not target {target}s", config_id)
            if config["config_type_id"] in seen:
                raise FieldError(
                    field,
                    f"duplicate configs {seen[config['config_type_id']]} and {config_id} of config type "
                    f"{config['config_type_id']}",
                    config_id,
                )
            seen[config["config_type_id"]] = config_id
            out.append(config_id)
        return out

    def type_of(self, record: dict) -> dict | None:
        return self.config_types.find(record.get("config_type_id"))
