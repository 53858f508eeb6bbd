"""Transit routers and edge routers: PUT takes the create body; PATCH is derived."""

from __future__ import annotations

from controller.api.schemas import Bodies
from controller.model import schema as s

IDS = {"type": ["array", "null"], "items": {"type": "string"}}
NULLABLE_BOOL = {"type": ["boolean", "null"]}
LISTENERS = {"type": ["object", "null"], "additionalProperties": {"type": "array", "items": {"type": "string"}}}
_ROUTER = {
    "name": s.string(),
    "cost": s.COST,
    "disabled": NULLABLE_BOOL,
    "noTraversal": NULLABLE_BOOL,
    "tags": s.TAGS,
    "configs": IDS,
    "ctrlChanListeners": LISTENERS,
}
_EDGE = {**_ROUTER, "appData": s.TAGS, "isTunnelerEnabled": NULLABLE_BOOL, "roleAttributes": s.ATTRIBUTES}
ROUTER_CREATE = s.obj(_ROUTER, required=("name",))
EDGE_CREATE = s.obj(_EDGE, required=("name",))

ROUTER = Bodies(ROUTER_CREATE, ROUTER_CREATE, s.patch_of(ROUTER_CREATE))
EDGE_ROUTER = Bodies(EDGE_CREATE, EDGE_CREATE, s.patch_of(EDGE_CREATE))
