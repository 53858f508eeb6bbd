"""Enrollments: create, and refresh of an outstanding one's expiry."""

from __future__ import annotations

from controller.api.schemas import Bodies
from controller.model import schema as s
from controller.model.enrollment import METHODS

CREATE = s.obj(
    {
        "expiresAt": s.DATETIME,
        "identityId": s.string(),
        "method": s.enum(*METHODS),
        "caId": s.string(nullable=True),
        "username": s.string(nullable=True),
        "tags": s.TAGS,
    },
    required=("expiresAt", "identityId", "method"),
)
REFRESH = s.obj({"expiresAt": s.DATETIME}, required=("expiresAt",))

BODIES = Bodies(create=CREATE)
