"""Sessions: every field optional and loosely typed, as the real controller accepts them."""

from __future__ import annotations

CREATE = {
    "type": "object",
    "properties": {
        "serviceId": {"type": ["string", "null"]},
        "tags": {"type": ["object", "null"]},
        "type": {"type": ["string", "null"]},
    },
}
