"""Configs: ``data`` is an object here; its config type's schema is the domain's check."""

from __future__ import annotations

from controller.api.schemas import Bodies
from controller.model import schema as s

DATA = {"type": "object"}
CREATE = s.obj(
    {"name": s.string(), "configTypeId": s.string(), "data": DATA, "tags": s.TAGS},
    required=("name", "configTypeId", "data"),
)
UPDATE = s.obj({"name": s.string(), "data": DATA, "tags": s.TAGS}, required=("name", "data"))
PATCH = s.patch_of(UPDATE)

BODIES = Bodies(CREATE, UPDATE, PATCH)
