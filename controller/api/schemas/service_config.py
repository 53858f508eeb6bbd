"""Identity service-config overrides: the (service, config) pairs to associate or remove."""

from __future__ import annotations

PAIR = {
    "type": "object",
    "properties": {"serviceId": {"type": "string"}, "configId": {"type": "string"}},
    "required": ["serviceId", "configId"],
}
PAIRS = {"type": "array", "items": PAIR}
