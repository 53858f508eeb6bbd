"""Controller settings."""

from __future__ import annotations

from controller.api.schemas import Bodies
from controller.model import schema as s

URIS = {"type": ["array", "null"], "items": {"type": "string"}}
OIDC = s.obj({"postLogoutUris": URIS, "redirectUris": URIS}, nullable=True)
CREATE = s.obj({"controllerId": s.string(min_length=1), "oidc": OIDC, "tags": s.TAGS}, required=("controllerId",))
UPDATE = s.obj({"oidc": OIDC, "tags": s.TAGS})
PATCH = s.patch_of(UPDATE)

BODIES = Bodies(CREATE, UPDATE, PATCH)
