"""Sessions: every field optional and loosely typed, as the real controller accepts them."""

from __future__ import annotations

from controller.api.schemas import Bodies

CREATE = {
    "type": "object",
    "properties": {
        "serviceId": {"type": ["string", "null"]},
        "tags": {"type": ["object", "null"]},
        "type": {"type": ["string", "null"]},
    },
}

BODIES = Bodies(create=CREATE)
