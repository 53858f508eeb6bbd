"""This controller as a member of its cluster (``listControllers``)."""

from __future__ import annotations

from controller.api.mappers.entity import links
from controller.pki.certs import cert_pem, fingerprint


def controller_view(*, config, instance_id, started_at, pki) -> dict:
    """This controller as ``listControllers`` shows it (one member, always online)."""
    base = config.base_url
    return {
        "_links": links("controllers", instance_id),
        "id": instance_id,
        "name": config.extra.get("controller_name", "controller"),
        "createdAt": started_at,
        "updatedAt": started_at,
        "tags": {},
        "isOnline": True,
        "lastJoinedAt": started_at,
        "ctrlAddress": config.ctrl_address,
        "certPem": cert_pem(pki.server_cert),
        "fingerprint": fingerprint(pki.server_cert),
        "apiAddresses": {
            "edge-client": [{"url": base + "/edge/client/v1", "version": "v1"}],
            "edge-management": [{"url": base + "/edge/management/v1", "version": "v1"}],
        },
    }


def member_view(member: dict, *, started_at) -> dict:
    """A cluster member (``Cluster.members``) as ``listControllers`` shows it, with its own API addresses."""
    from cryptography import x509

    base = f"https://{member['apiAddress']}" if member["apiAddress"] else ""
    pem = member.get("serverCert") or ""
    cert = x509.load_pem_x509_certificates(pem.encode())[0] if pem else None
    return {
        "_links": links("controllers", member["id"]),
        "id": member["id"],
        "name": member["id"],
        "createdAt": started_at,
        "updatedAt": started_at,
        "tags": {},
        "isOnline": member["isConnected"],
        "lastJoinedAt": started_at,
        "ctrlAddress": member.get("ctrlAddress") or (f"tls:{member['apiAddress']}" if member["apiAddress"] else ""),
        "certPem": cert_pem(cert) if cert is not None else "",
        "fingerprint": fingerprint(cert) if cert is not None else "",
        "apiAddresses": {
            "edge-client": [{"url": base + "/edge/client/v1", "version": "v1"}],
            "edge-management": [{"url": base + "/edge/management/v1", "version": "v1"}],
        },
    }
