"""API sessions on the wire: stored (zt-session) ones and OIDC sessions built from their token."""

from __future__ import annotations

from controller.api.auth_wire import legacy_queries, oidc_queries
from controller.api.mappers.entity import ref
from controller.clock import rfc3339

FLAGS = (
    ("isCertExtendRequested", "is_cert_extend_requested"),
    ("isCertKeyRollRequested", "is_cert_key_roll_requested"),
    ("improperClientCertChain", "improper_client_cert_chain"),
)


def api_session_view(
    record: dict, current: bool = False, auth_queries: list[dict] | None = None, *, api_sessions, identities
) -> dict:
    """A stored API session; ``current`` adds its expiry (``/current-api-session``, ``authenticate``)."""
    sessions = api_sessions
    identity = identities.find(record["identity_id"]) or {"id": record["identity_id"]}
    if auth_queries is None:
        auth_queries = legacy_queries(sessions.pending(record, identity))
    last = sessions.last_activity(record)
    out = {
        "_links": {
            "self": {"href": f"./api-sessions/{record['id']}"},
            "sessions": {"href": f"./api-sessions/{record['id']}/sessions"},
        },
        "id": record["id"],
        "createdAt": record["created_at"],
        "updatedAt": record["updated_at"],
        "tags": record.get("tags") or {},
        "token": record["token"],
        "identityId": record["identity_id"],
        "identity": ref(identities, record["identity_id"]),
        "authenticatorId": record.get("authenticator_id"),
        "authQueries": auth_queries,
        "configTypes": record.get("config_types") or [],
        "ipAddress": record.get("ip_address") or "",
        "isMfaRequired": bool(record.get("is_mfa_required")),
        "isMfaComplete": bool(record.get("is_mfa_complete")),
        "isCertExtendable": bool(record.get("is_cert_extendable")),
        "lastActivityAt": rfc3339(last),
        "cachedLastActivityAt": record["last_activity_at"],
        "cachedUpdatedAt": record["updated_at"],  # required by the official documents
    }
    for flag, key in FLAGS:
        if record.get(key):
            out[flag] = True
    if current:
        out["expiresAt"] = rfc3339(last + sessions.timeout)
        out["expirationSeconds"] = int(sessions.timeout.total_seconds())
    return out


def oidc_session_view(resolved, *, api_session_view, api_sessions, clock, factors) -> dict:
    """``GET /current-api-session`` for an OIDC session (built from the token, as the real one)."""
    sessions, record, claims = api_sessions, resolved.session, resolved.claims
    now = clock.now()
    enrolled = factors.mfa_enabled(resolved.identity["id"])
    out = api_session_view(record, auth_queries=oidc_queries(resolved.pending, enrolled))
    out.pop("cachedLastActivityAt", None)
    out["lastActivityAt"] = rfc3339(now)
    out["expiresAt"] = rfc3339(now + sessions.timeout)
    out["expirationSeconds"] = max(0, int(claims["exp"] - now.timestamp()))
    return out
