"""Controller settings on the wire: overrides and a controller's effective settings."""

from __future__ import annotations

import copy

from controller.api.mappers.entity import links, render
from controller.model.settings import OIDC_KEYS


def oidc_wire(record: dict | None) -> dict:
    """The ``oidc`` settings of a record, unset keys left out."""
    return {
        wire_key: copy.deepcopy((record or {}).get(key))
        for wire_key, key in OIDC_KEYS
        if (record or {}).get(key) is not None
    }


def setting_view(record: dict, *, controller_settings) -> dict:
    return {**render(controller_settings, record), "oidc": oidc_wire(record.get("oidc"))}


def effective_view(controller_id: str, *, controller_settings) -> dict:
    """``detailControllerSettingEffective``: the override's common fields, ``effective`` and ``instance``."""
    instance, base, merged = controller_settings.effective(controller_id)
    if instance:
        out = render(controller_settings, instance)
    else:
        out = {
            "_links": links("controller-settings", controller_id),
            "id": controller_id,
            "createdAt": base["created_at"],
            "updatedAt": base["updated_at"],
            "tags": {},
        }
    out["effective"] = {"oidc": oidc_wire(merged)}
    out["instance"] = {"oidc": oidc_wire((instance or {}).get("oidc"))}
    return out
