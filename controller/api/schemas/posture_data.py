"""Posture responses an identity reports, one or in bulk."""

from __future__ import annotations

from controller.model import schema as s
from controller.model.posture_data import RESPONSE_TYPES

STRINGS = {"type": ["array", "null"], "items": {"type": "string"}}
RESPONSE = s.obj(
    {
        "id": s.string(),
        "typeId": s.enum(*RESPONSE_TYPES),
        "type": s.string(nullable=True),
        "version": s.string(nullable=True),
        "build": s.string(nullable=True),
        "domain": s.string(nullable=True),
        "macAddresses": STRINGS,
        "path": s.string(nullable=True),
        "isRunning": {"type": ["boolean", "null"]},
        "hash": s.string(nullable=True),
        "signerFingerprints": STRINGS,
        "woken": {"type": ["boolean", "null"]},
        "unlocked": {"type": ["boolean", "null"]},
    },
    required=("id", "typeId"),
)
BULK = {"type": "array", "items": RESPONSE}
