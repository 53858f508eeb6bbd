"""``authenticate``: the legacy login body (every method; the password method's credentials among them)."""

from __future__ import annotations

from controller.model import schema as s

AUTHENTICATE = s.obj(
    {
        "configTypes": {"type": ["array", "null"], "items": {"type": "string"}},
        "envInfo": {"type": ["object", "null"]},
        "sdkInfo": {"type": ["object", "null"]},
        "username": s.USERNAME,
        "password": s.PASSWORD,
    }
)
