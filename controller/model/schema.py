"""Building blocks of JSON Schemas: the request bodies in ``controller/api/schemas``, and the
domain's own rules built from them (posture check types).

Schemas are written once for create and update (PUT); PATCH schemas are
derived with :func:`patch_of`, so the three never drift apart.
"""

from __future__ import annotations

import copy
from typing import Any

TAG_VALUE = {"type": ["string", "boolean", "number", "null"]}
TAGS = {"type": ["object", "null"], "additionalProperties": TAG_VALUE}
#: free map (identity appData may nest)
FREE_MAP = {"type": ["object", "null"]}
ATTRIBUTES = {"type": ["array", "null"], "items": {"type": "string"}}
ROLES = {"type": ["array", "null"], "items": {"type": "string"}}
COST = {"type": ["integer", "null"], "minimum": 0, "maximum": 65535}
#: an optional precedence: as the real (go-swagger) validation skips an optional enum's zero value,
#: ``""`` is accepted and means the default (the Admin Console's terminator form sends it)
PRECEDENCE = {"type": ["string", "null"], "enum": ["default", "required", "failed", "", None]}
DATETIME = {"type": "string", "format": "date-time"}
BOOLEAN = {"type": "boolean"}
SEMANTIC = {"type": "string", "enum": ["AllOf", "AnyOf"]}
USERNAME = {"type": "string", "minLength": 4, "maxLength": 100}
PASSWORD = {"type": "string", "minLength": 5, "maxLength": 100}


def string(min_length: int | None = None, max_length: int | None = None, nullable: bool = False) -> dict:
    schema: dict[str, Any] = {"type": ["string", "null"] if nullable else "string"}
    if min_length is not None:
        schema["minLength"] = min_length
    if max_length is not None:
        schema["maxLength"] = max_length
    return schema


def integer(minimum: int | None = None, maximum: int | None = None, nullable: bool = False) -> dict:
    schema: dict[str, Any] = {"type": ["integer", "null"] if nullable else "integer"}
    if minimum is not None:
        schema["minimum"] = minimum
    if maximum is not None:
        schema["maximum"] = maximum
    return schema


def enum(*values: str, nullable: bool = False) -> dict:
    if nullable:
        return {"type": ["string", "null"], "enum": [*values, None]}
    return {"type": "string", "enum": list(values)}


def obj(properties: dict, required: tuple[str, ...] = (), nullable: bool = False) -> dict:
    schema: dict[str, Any] = {"type": ["object", "null"] if nullable else "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


def nullable(schema: dict) -> dict:
    """The same schema also accepting null (PATCH: null means absent)."""
    out = copy.deepcopy(schema)
    kind = out.get("type")
    if isinstance(kind, str):
        out["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        out["type"] = [*kind, "null"]
    if "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


def patch_of(schema: dict) -> dict:
    """A PATCH schema: every top-level property optional and nullable."""
    out = copy.deepcopy(schema)
    out.pop("required", None)
    out["properties"] = {name: nullable(prop) for name, prop in out.get("properties", {}).items()}
    return out


def without(schema: dict, *names: str) -> dict:
    out = copy.deepcopy(schema)
    for name in names:
        out["properties"].pop(name, None)
    if "required" in out:
        out["required"] = [r for r in out["required"] if r not in names]
    return out


def with_props(schema: dict, required: tuple[str, ...] = (), **props: dict) -> dict:
    out = copy.deepcopy(schema)
    out["properties"].update(props)
    if required:
        out["required"] = sorted(set(out.get("required", [])) | set(required))
    return out
