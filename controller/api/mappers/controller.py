"""This controller as a member of its cluster (``listControllers``)."""

from __future__ import annotations

from controller.api.mappers.entity import links
from controller.pki.certs import cert_pem, fingerprint


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
        "ctrlAddress": ctl.config.ctrl_address,
        "certPem": cert_pem(ctl.pki.server_cert),
        "fingerprint": fingerprint(ctl.pki.server_cert),
        "apiAddresses": {
            "edge-client": [{"url": base + "/edge/client/v1", "version": "v1"}],
            "edge-management": [{"url": base + "/edge/management/v1", "version": "v1"}],
        },
    }
