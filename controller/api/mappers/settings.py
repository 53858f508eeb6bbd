"""Controller settings on the wire: overrides, a controller's effective settings, the controller itself."""

from __future__ import annotations

import copy

from controller.api.mappers.entity import links, render
from controller.model.settings import OIDC_KEYS
from controller.pki.certs import cert_pem, fingerprint


def oidc_wire(record: dict | None) -> dict:
    """The ``oidc`` settings of a record, unset keys left out."""
    return {
        wire_key: copy.deepcopy((record or {}).get(key))
        for wire_key, key in OIDC_KEYS
        if (record or {}).get(key) is not None
    }


def setting_view(ctl, record: dict) -> dict:
    return {**render(ctl.controller_settings, record), "oidc": oidc_wire(record.get("oidc"))}


def effective_view(ctl, controller_id: str) -> dict:
    """``detailControllerSettingEffective``: the override's common fields, ``effective`` and ``instance``."""
    instance, base, merged = ctl.controller_settings.effective(controller_id)
    if instance:
        out = render(ctl.controller_settings, instance)
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


def controller_view(ctl) -> dict:
    """This controller as ``listControllers`` shows it (one member, always online)."""
    base = ctl.config.base_url
    return {
        "_links": links("controllers", ctl.instance_id),
        "id": ctl.instance_id,
        "name": ctl.config.extra.get("controller_name", "controller"),
        "createdAt": ctl.started_at,
        "updatedAt": ctl.started_at,
        "tags": {},
        "isOnline": True,
        "lastJoinedAt": ctl.started_at,
        "ctrlAddress": None,
        "certPem": cert_pem(ctl.pki.server_cert),
        "fingerprint": fingerprint(ctl.pki.server_cert),
        "apiAddresses": {
            "edge-client": [{"url": base + "/edge/client/v1", "version": "v1"}],
            "edge-management": [{"url": base + "/edge/management/v1", "version": "v1"}],
        },
    }
