"""The fabric API's request bodies (``/fabric/v1``), as the real fabric documents declare them."""

from __future__ import annotations

from controller.api.schemas import Bodies
from controller.model import schema as s

IDS = {"type": ["array", "null"], "items": {"type": "string"}}
NULLABLE_BOOL = {"type": ["boolean", "null"]}
LISTENERS = {"type": ["object", "null"], "additionalProperties": {"type": "array", "items": {"type": "string"}}}

_ROUTER = {
    "id": s.string(min_length=1),
    "name": s.string(),
    "fingerprint": s.string(nullable=True),
    "cost": s.COST,
    "noTraversal": NULLABLE_BOOL,
    "disabled": NULLABLE_BOOL,
    "ctrlChanListeners": LISTENERS,
    "configs": IDS,
    "tags": s.TAGS,
}
ROUTER_CREATE = s.obj(_ROUTER, required=("id", "name", "cost", "noTraversal"))
ROUTER_UPDATE = s.obj(
    {k: v for k, v in _ROUTER.items() if k != "id"}, required=("name", "fingerprint", "cost", "noTraversal")
)
ROUTER = Bodies(ROUTER_CREATE, ROUTER_UPDATE, s.patch_of(ROUTER_UPDATE))

_SERVICE = {
    "name": s.string(),
    "terminatorStrategy": s.string(nullable=True),
    "maxIdleTimeMillis": s.integer(minimum=0, nullable=True),
    "tags": s.TAGS,
}
SERVICE_CREATE = s.obj(_SERVICE, required=("name",))
SERVICE = Bodies(SERVICE_CREATE, SERVICE_CREATE, s.patch_of(SERVICE_CREATE))

_TERMINATOR = {
    "service": s.string(),
    "router": s.string(),
    "binding": s.string(),
    "address": s.string(),
    "instanceId": s.string(nullable=True),
    "instanceSecret": s.string(nullable=True),
    "cost": s.COST,
    "precedence": s.PRECEDENCE,
    "hostId": s.string(nullable=True),
    "tags": s.TAGS,
}
TERMINATOR_CREATE = s.obj(_TERMINATOR, required=("service", "router", "address", "binding"))
TERMINATOR_UPDATE = s.without(TERMINATOR_CREATE, "instanceId", "instanceSecret")
TERMINATOR = Bodies(TERMINATOR_CREATE, TERMINATOR_UPDATE, s.patch_of(TERMINATOR_UPDATE))

LINK_PATCH = s.obj({"down": NULLABLE_BOOL, "staticCost": s.integer(minimum=0, nullable=True)})
CIRCUIT_DELETE = s.obj({"immediate": NULLABLE_BOOL}, nullable=True)
INSPECT = s.obj(
    {"appRegex": s.string(), "requestedValues": {"type": "array", "items": {"type": "string"}}},
    required=("appRegex", "requestedValues"),
)
