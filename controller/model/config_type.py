"""Config types: a name, a target and a JSON schema that configs of the type must satisfy."""

from __future__ import annotations

from typing import Callable

import orjson

from controller.entities import ENTITIES
from controller.errors import FieldError, ReferenceExists
from controller.model.base import Attr, Core, EntityManager, name_field, scalar
from controller.store.query import Field

TARGETS = ("service", "router", "other")


def check_schema(schema: dict | None) -> None:
    """A non-empty schema must compile and describe an object at its root (400 field ``schema``)."""
    if not schema:
        return
    from jsonschema import Draft7Validator  # on first use: its import costs over a second (see validation.py)
    from jsonschema.exceptions import SchemaError

    try:
        Draft7Validator.check_schema(schema)
    except SchemaError as ex:
        raise FieldError("schema", f"invalid schema: {ex.message}", schema) from ex
    if schema.get("type") != "object":
        raise FieldError("schema", 'the root of a config type schema must be of "type": "object"', schema)


class ConfigTypeManager(EntityManager):
    declaration = ENTITIES["config_types"]
    attrs = (Attr("name"), Attr("schema", default=dict), Attr("target", default="service", on_update=False))
    filter_fields = (
        name_field(),
        scalar("target", "string"),
        Field("schema", "string", lambda r: orjson.dumps(r.get("schema") or {}).decode()),
        Field("isSystem", "bool", lambda r: bool(r.get("is_system"))),
    )
    link_names = ("configs",)

    def __init__(self, core: Core, *, config_ids_of_type: Callable[[str], set[str]]):
        """``config_ids_of_type`` reaches the configs, which are built after (they validate against types)."""
        super().__init__(core)
        self.config_ids_of_type = config_ids_of_type

    def resolve(self, names: list[str]) -> list[str]:
        """Config type names or ids -> ids; ``all`` stays ``["all"]``; unknown ones are ignored."""
        if "all" in names:
            return ["all"]
        out = []
        for name in names:
            record = self.find(name) or self.find_by_name(name)
            if record is not None:
                out.append(record["id"])
        return out

    def prepare(self, record: dict, old: dict | None, body: dict) -> None:
        if record.get("name") == "all":
            raise FieldError("name", "name may not be 'all'", "all")
        record["schema"] = record.get("schema") or {}
        check_schema(record["schema"])
        if old is None:
            record["target"] = record.get("target") or "service"
        record["is_system"] = bool(old and old.get("is_system"))

    def before_delete(self, record: dict) -> None:
        users = sorted(self.config_ids_of_type(record["id"]))
        if users:
            raise ReferenceExists("configTypeId", users)
