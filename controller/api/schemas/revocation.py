"""Revocations."""

from __future__ import annotations

from controller.api.schemas import Bodies
from controller.model import schema as s
from controller.model.revocation import TYPES

CREATE = s.obj({"id": s.string(min_length=1), "type": s.enum(*TYPES), "tags": s.TAGS}, required=("id", "type"))

BODIES = Bodies(create=CREATE)
