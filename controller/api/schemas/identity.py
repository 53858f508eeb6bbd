"""Identities: CRUD (create may ask for enrollments) and disable."""

from __future__ import annotations

from controller.api.schemas import Bodies
from controller.enroll.methods import IDENTITY_ENROLLMENTS
from controller.model import schema as s
from controller.model.identity import IDENTITY_TYPES, PERMISSIONS

_COMMON = {
    "appData": s.FREE_MAP,
    "authPolicyId": s.string(nullable=True),
    "defaultHostingCost": s.COST,
    "defaultHostingPrecedence": s.PRECEDENCE,
    "externalId": s.string(nullable=True),
    "isAdmin": s.BOOLEAN,
    "name": s.string(),
    "permissions": {"type": ["array", "null"], "items": s.enum(*PERMISSIONS)},
    "roleAttributes": s.ATTRIBUTES,
    "serviceHostingCosts": {
        "type": ["object", "null"],
        "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 65535},
    },
    "serviceHostingPrecedences": {
        "type": ["object", "null"],
        "additionalProperties": {"type": "string", "enum": ["default", "required", "failed"]},
    },
    "tags": s.TAGS,
    "type": s.enum(*IDENTITY_TYPES),
}
ENROLLMENT_REQUEST = s.obj(
    {
        method: {"type": ["boolean", "null"]} if field_name is None else s.string(nullable=True)
        for method, field_name in IDENTITY_ENROLLMENTS.items()
    },
    nullable=True,
)
CREATE = s.obj({**_COMMON, "enrollment": ENROLLMENT_REQUEST}, required=("name", "type", "isAdmin"))
UPDATE = s.obj(dict(_COMMON), required=("type", "name", "isAdmin"))
PATCH = s.patch_of(UPDATE)
DISABLE = s.obj({"durationMinutes": s.integer(minimum=0)}, required=("durationMinutes",))

BODIES = Bodies(CREATE, UPDATE, PATCH)
