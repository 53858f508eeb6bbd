"""Authenticators: admin CRUD, the caller's own password change, and the certificate lifecycle."""

from __future__ import annotations

from controller.api.schemas import Bodies
from controller.model import schema as s
from controller.model.authenticator import METHODS

CREATE = s.obj(
    {
        "certPem": s.string(),
        "identityId": s.string(),
        "method": s.enum(*METHODS),
        "password": s.PASSWORD,
        "username": s.USERNAME,
        "tags": s.TAGS,
    },
    required=("method", "identityId"),
)
UPDATE = s.obj({"password": s.PASSWORD, "username": s.USERNAME, "tags": s.TAGS}, required=("username", "password"))
PATCH = s.patch_of(UPDATE)
UPDATE_OWN = s.with_props(UPDATE, required=("currentPassword",), currentPassword=s.PASSWORD)
PATCH_OWN = s.with_props(PATCH, required=("currentPassword",), currentPassword=s.PASSWORD)
EXTEND = s.obj({"clientCertCsr": s.string()}, required=("clientCertCsr",))
EXTEND_VERIFY = s.obj({"clientCert": s.string()}, required=("clientCert",))
REQUEST_EXTEND = s.obj({"rollKeys": {"type": ["boolean", "null"]}})
RE_ENROLL = s.obj({"expiresAt": s.DATETIME}, required=("expiresAt",))

BODIES = Bodies(CREATE, UPDATE, PATCH)
