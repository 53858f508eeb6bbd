"""Services."""

from __future__ import annotations

from controller.api.schemas import Bodies
from controller.model import schema as s

IDS = {"type": ["array", "null"], "items": {"type": "string"}}
_COMMON = {
    "name": s.string(),
    "configs": IDS,
    "encryptionRequired": s.BOOLEAN,
    "maxIdleTimeMillis": s.integer(minimum=0, nullable=True),
    "roleAttributes": s.ATTRIBUTES,
    "tags": s.TAGS,
    "terminatorStrategy": s.string(nullable=True),
}
CREATE = s.obj(_COMMON, required=("name", "encryptionRequired"))
UPDATE = s.obj(_COMMON, required=("name",))
PATCH = s.patch_of(UPDATE)

BODIES = Bodies(CREATE, UPDATE, PATCH)
