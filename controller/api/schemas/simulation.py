"""Simulation mode's control bodies: advance the clock, inject a fault, fault a router's edge messages."""

from __future__ import annotations

from controller.model import schema as s
from controller.simulation import DIRECTIONS

ADVANCE = s.obj({"seconds": {"type": "number", "minimum": 0}}, required=("seconds",))
FAULT = s.obj(
    {
        "path": s.string(min_length=1),
        "method": s.enum("GET", "POST", "PUT", "PATCH", "DELETE", nullable=True),
        "status": s.integer(400, 599, nullable=True),
        "latencyMs": s.integer(0, 60000, nullable=True),
        "drop": {"type": ["boolean", "null"]},
        "count": s.integer(1, nullable=True),
    }
)

ROUTER_FAULT = {
    **s.obj(
        {
            "router": s.string(min_length=1),
            "direction": s.enum(*DIRECTIONS, nullable=True),
            "contentTypes": {"type": ["array", "null"], "items": {"type": "string", "minLength": 1}, "maxItems": 64},
            "drop": {"type": ["boolean", "null"]},
            "latencyMs": s.integer(0, 60000, nullable=True),
            "seconds": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 366 * 86400},
        },
        required=("router",),
    ),
    "additionalProperties": False,
}

CLUSTER_FAULT = {
    **s.obj(
        {
            "members": {
                "type": ["array", "null"],
                "items": {"type": "string", "minLength": 1},
                "maxItems": 64,
                "description": "ids of the members to cut this one off from (default: every other member)",
            }
        }
    ),
    "additionalProperties": False,
}
