"""External JWT signers as the unauthenticated client listing shows them."""

from __future__ import annotations


def client_view(record: dict) -> dict:
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
