"""External JWT signers on the wire: the management view and the unauthenticated client listing's."""

from __future__ import annotations

from controller.api.mappers.entity import render
from controller.clock import ZERO_TIME


def signer_view(record: dict, *, external_jwt_signers) -> dict:
    out = render(external_jwt_signers, record)
    out.update(
        {
            "commonName": record.get("common_name") or "",
            "fingerprint": record.get("fingerprint"),
            "notAfter": record.get("not_after") or ZERO_TIME,
            "notBefore": record.get("not_before") or ZERO_TIME,
            "scopes": record.get("scopes") or [],
        }
    )
    return out


def client_signer_view(record: dict) -> dict:
    """The client API's listing (no session needed): what an SDK needs to start a login."""
    issuer = (record.get("issuer") or "").rstrip("/")
    return {
        "_links": {"self": {"href": f"./external-jwt-signers/{record['id']}"}},
        "id": record["id"],
        "createdAt": record["created_at"],
        "updatedAt": record["updated_at"],
        "tags": record.get("tags") or {},
        "name": record["name"],
        "enabled": bool(record.get("enabled")),
        "externalAuthUrl": record.get("external_auth_url"),
        "clientId": record.get("client_id"),
        "audience": record.get("audience"),
        "scopes": record.get("scopes") or [],
        "targetToken": record.get("target_token") or "ACCESS",
        "enrollToCertEnabled": bool(record.get("enroll_to_cert_enabled")),
        "enrollToTokenEnabled": bool(record.get("enroll_to_token_enabled")),
        "openIdConfigurationUrl": f"{issuer}/.well-known/openid-configuration",
    }
