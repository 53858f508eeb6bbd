"""Terminators: PUT takes the create body."""

from __future__ import annotations

from controller.api.schemas import Bodies
from controller.model import schema as s

_COMMON = {
    "service": s.string(),
    "router": s.string(),
    "address": s.string(),
    "binding": s.string(),
    "cost": s.integer(minimum=0, maximum=65535, nullable=True),
    "identity": s.string(nullable=True),
    "identitySecret": s.string(nullable=True),
    "precedence": s.PRECEDENCE,
    "tags": s.TAGS,
}
CREATE = s.obj(_COMMON, required=("service", "router", "address", "binding"))
UPDATE = CREATE
PATCH = s.patch_of(UPDATE)

BODIES = Bodies(CREATE, UPDATE, PATCH)
