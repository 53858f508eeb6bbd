"""Enrollments: create, and refresh of an outstanding one's expiry."""

from __future__ import annotations

from controller.api.schemas import Bodies
from controller.enroll.methods import IDENTITY_ENROLLMENTS
from controller.model import schema as s

CREATE = s.obj(
    {
        "expiresAt": s.DATETIME,
        "identityId": s.string(),
        "method": s.enum(*IDENTITY_ENROLLMENTS),
        "caId": s.string(nullable=True),
        "username": s.string(nullable=True),
        "tags": s.TAGS,
    },
    required=("expiresAt", "identityId", "method"),
)
REFRESH = s.obj({"expiresAt": s.DATETIME}, required=("expiresAt",))

BODIES = Bodies(create=CREATE)
