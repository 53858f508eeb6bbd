"""Authentication on the wire: the request body turned into an ``AuthRequest``, and the ``authQueries``.

The real controller matches authenticate body keys without regard to case; the
domain gets the credentials and the session's client details as arguments. What a
session still owes (a :class:`~controller.auth.request.Pending`) becomes the
``authQueries`` of a legacy session (``/authenticate``, ``/current-api-session``)
or of an OIDC login here, at the edge.
"""

from __future__ import annotations

from controller.auth.request import AuthRequest, Pending

#: authenticate body keys, matched without regard to case like the real controller
KNOWN_KEYS = {
    "username": "username",
    "password": "password",
    "configtypes": "configTypes",
    "envinfo": "envInfo",
    "sdkinfo": "sdkInfo",
    "csrpem": "csrPem",
}
#: the body keys that are a primary method's credentials
CREDENTIALS = ("username", "password")
#: a legacy session's pending TOTP
MFA_QUERY = {
    "typeId": "MFA",
    "provider": "ziti",
    "format": "alphaNumeric",
    "httpMethod": "POST",
    "httpUrl": "./authenticate/mfa",
    "minLength": 4,
    "maxLength": 6,
    "scopes": None,
}
#: an OIDC login's pending TOTP
OIDC_TOTP_QUERY = {
    "typeId": "TOTP",
    "provider": "ziti",
    "httpMethod": "POST",
    "httpUrl": "./oidc/login/totp",
    "format": "numeric",
    "minLength": 6,
    "maxLength": 8,
    "scopes": None,
}


def fold_keys(body) -> dict:
    """The body with its known keys in their canonical case (anything but an object: empty)."""
    if not isinstance(body, dict):
        return {}
    return {KNOWN_KEYS.get(key.lower(), key): value for key, value in body.items()}


def auth_request(method: str, body, **connection) -> AuthRequest:
    """An :class:`AuthRequest` of an authenticate (or OIDC login) body and the connection's details.

    The values are passed on as sent: each method checks its credentials, and the legacy
    and OIDC logins each read ``configTypes``, ``sdkInfo`` and ``envInfo`` their own way.
    """
    folded = fold_keys(body or {})
    connection = {k: tuple(v) if isinstance(v, list) else v for k, v in connection.items()}
    return AuthRequest(
        method,
        {key: folded[key] for key in CREDENTIALS if key in folded},
        config_types=folded.get("configTypes"),
        sdk_info=folded.get("sdkInfo"),
        env_info=folded.get("envInfo"),
        csr_pem=folded.get("csrPem"),
        **connection,
    )


def ext_jwt_query(signer: dict) -> dict:
    """The query naming a secondary ext-jwt signer whose token is still owed."""
    return {
        "typeId": "EXT-JWT",
        "provider": "url",
        "httpUrl": signer.get("external_auth_url"),
        "clientId": signer.get("client_id"),
        "scopes": signer.get("scopes") or [],
        "id": signer["id"],
    }


def legacy_queries(pending: Pending) -> list[dict]:
    """The ``authQueries`` of a legacy API session."""
    return ([dict(MFA_QUERY)] if pending.totp else []) + [ext_jwt_query(s) for s in pending.ext_jwt]


def oidc_queries(pending: Pending, totp_enrolled: bool) -> list[dict]:
    """The ``authQueries`` of an OIDC login (``isTotpEnrolled`` omitted when false)."""
    out = []
    if pending.totp:
        out.append({**OIDC_TOTP_QUERY, **({"isTotpEnrolled": True} if totp_enrolled else {})})
    return out + [ext_jwt_query(s) for s in pending.ext_jwt]
