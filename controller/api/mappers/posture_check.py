"""Posture checks and posture check types on the wire (type fields camelCased)."""

from __future__ import annotations

from controller.api.mappers.entity import render
from controller.model.base import snake
from controller.model.posture_check import ALL_TYPE_FIELDS, TYPE_FIELDS, camel_keys


def posture_check_view(record: dict, *, posture_checks) -> dict:
    """Only the fields of the check's own type, camelCased."""
    out = render(posture_checks, record)
    for name in ALL_TYPE_FIELDS:
        out.pop(name, None)
    for name in TYPE_FIELDS.get(record.get("type_id"), ()):
        out[name] = camel_keys(record.get(snake(name)))
    out["version"] = record.get("version", 1)
    out["roleAttributes"] = record.get("role_attributes") or []
    return out


def posture_check_type_view(record: dict, *, posture_check_types) -> dict:
    out = render(posture_check_types, record)
    out.update(
        {
            "name": record.get("name"),
            "version": record.get("version", "1"),
            "operatingSystems": camel_keys(record.get("operating_systems") or []),
        }
    )
    return out
