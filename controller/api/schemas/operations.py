"""Database operations and identity tracing."""

from __future__ import annotations

from controller.model import schema as s

TRACE_SPEC = s.obj(
    {
        "channels": {"type": ["array", "null"], "items": {"type": "string"}},
        "duration": s.string(nullable=True),
        "enabled": {"type": ["boolean", "null"]},
        "traceId": s.string(nullable=True),
    }
)
