"""Posture checks: every type's fields are accepted here; the type's own rules are the domain's."""

from __future__ import annotations

from controller.api.schemas import Bodies
from controller.model import schema as s
from controller.model.posture_check import ALL_TYPE_FIELDS, TYPES

_ANY = {"type": ["array", "object", "string", "integer", "boolean", "null"]}
CREATE = s.obj(
    {
        "name": s.string(),
        "typeId": s.enum(*TYPES),
        "roleAttributes": s.ATTRIBUTES,
        "tags": s.TAGS,
        **{name: _ANY for name in ALL_TYPE_FIELDS},
    },
    required=("name", "typeId"),
)
UPDATE = s.obj({**CREATE["properties"], "typeId": s.enum(*TYPES, nullable=True)}, required=("name",))
PATCH = {**s.patch_of(UPDATE), "required": ["typeId"]}

BODIES = Bodies(CREATE, UPDATE, PATCH)
