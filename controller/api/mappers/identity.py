"""Identities and identity types on the wire (management detail and ``/current-identity``)."""

from __future__ import annotations

from controller.api.mappers.entity import ref, render
from controller.model.identity import DEFAULT_AUTH_POLICY


def identity_view(
    record: dict,
    *,
    authenticators_summary,
    enrollments_summary,
    identities,
    router_presence,
    auth_policies,
    api_sessions,
    factors,
    identity_types,
) -> dict:
    out = render(identities, record)
    identity_id = record["id"]
    disabled = identities.is_disabled(record)
    connected = router_presence.is_connected(identity_id)
    policy_id = record.get("auth_policy_id") or DEFAULT_AUTH_POLICY
    out.update(
        {
            "authPolicyId": policy_id,
            "authPolicy": ref(auth_policies, policy_id),
            "authenticators": authenticators_summary(identity_id),
            "enrollment": enrollments_summary(identity_id),
            "disabled": disabled,
            "disabledAt": record.get("disabled_at") if disabled else None,
            "disabledUntil": record.get("disabled_until") if disabled else None,
            "edgeRouterConnectionStatus": "online" if connected else "offline",
            "envInfo": record.get("env_info") or {},
            "sdkInfo": record.get("sdk_info") or {},
            "hasApiSession": api_sessions.has_session(identity_id),
            "hasEdgeRouterConnection": connected,
            "isDefaultAdmin": bool(record.get("is_default_admin")),
            "isMfaEnabled": factors.mfa_enabled(identity_id),
            "type": ref(identity_types, record.get("type_id", "Default")),
            "typeId": record.get("type_id", "Default"),
            "roleAttributes": record.get("role_attributes") or [],
            "permissions": record.get("permissions") or [],
            "appData": record.get("app_data") or {},
        }
    )
    return out


def identity_type_view(record: dict, *, identity_types) -> dict:
    return {**render(identity_types, record), "name": record["name"]}
