"""``Authorization: Bearer`` values, parsed once at the HTTP edge.

The domain (primary and secondary ext-jwt, OIDC access tokens, token
enrollment) takes the candidate tokens as a tuple and never sees a header.
"""

from __future__ import annotations

#: the real controller looks at no more than three bearer values per request
MAX_BEARER_TOKENS = 3
PREFIX = "Bearer "


def bearer_tokens(header: str | None) -> tuple[str, ...]:
    """The first three ``Bearer`` values of an Authorization header (prefix exact)."""
    if not header:
        return ()
    values = [part.strip() for part in header.split(",")]
    return tuple(value[len(PREFIX) :].strip() for value in values if value.startswith(PREFIX))[:MAX_BEARER_TOKENS]


def oauth_bearer(header: str | None) -> str | None:
    """The one token of ``Authorization: <scheme> <token>`` when the scheme is ``Bearer`` in any case.

    What the OIDC endpoints read (``/oidc/userinfo``), as the real controller's OIDC library does.
    """
    scheme, _, token = (header or "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None
