"""Config types."""

from __future__ import annotations

from controller.api.schemas import Bodies
from controller.model import schema as s
from controller.model.config_type import TARGETS

SCHEMA = {"type": ["object", "null"]}
CREATE = s.obj(
    {"name": s.string(), "schema": SCHEMA, "tags": s.TAGS, "target": s.enum(*TARGETS, nullable=True)},
    required=("name",),
)
UPDATE = s.obj({"name": s.string(), "schema": SCHEMA, "tags": s.TAGS}, required=("name",))
PATCH = s.patch_of(UPDATE)

BODIES = Bodies(CREATE, UPDATE, PATCH)
