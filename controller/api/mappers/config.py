"""Configs and config types on the wire."""

from __future__ import annotations

from controller.api.mappers.entity import ref, render


def config_view(record: dict, *, configs, config_types) -> dict:
    out = render(configs, record)
    out["configType"] = ref(config_types, record.get("config_type_id"))
    out["data"] = record.get("data") or {}
    return out


def config_type_view(record: dict, *, config_types) -> dict:
    out = render(config_types, record)
    out["schema"] = record.get("schema") or {}
    out["target"] = record.get("target") or "service"
    return out
