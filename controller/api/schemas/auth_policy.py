"""Authentication policies: create and replace take every section; PATCH merges nested ones."""

from __future__ import annotations

from controller.api.schemas import Bodies
from controller.model import schema as s

CERT = s.obj({"allowExpiredCerts": s.BOOLEAN, "allowed": s.BOOLEAN}, required=("allowed", "allowExpiredCerts"))
EXT_JWT = s.obj(
    {"allowed": s.BOOLEAN, "allowedSigners": {"type": ["array", "null"], "items": {"type": "string"}}},
    required=("allowed", "allowedSigners"),
)
UPDB = s.obj(
    {
        "allowed": s.BOOLEAN,
        "lockoutDurationMinutes": s.integer(),
        "maxAttempts": s.integer(),
        "minPasswordLength": s.integer(),
        "requireMixedCase": s.BOOLEAN,
        "requireNumberChar": s.BOOLEAN,
        "requireSpecialChar": s.BOOLEAN,
    },
    required=(
        "allowed",
        "minPasswordLength",
        "requireSpecialChar",
        "requireNumberChar",
        "requireMixedCase",
        "maxAttempts",
        "lockoutDurationMinutes",
    ),
)
PRIMARY = s.obj({"cert": CERT, "extJwt": EXT_JWT, "updb": UPDB}, required=("updb", "cert", "extJwt"))
SECONDARY = s.obj({"requireExtJwtSigner": s.string(nullable=True), "requireTotp": s.BOOLEAN}, required=("requireTotp",))
CREATE = s.obj(
    {"name": s.string(), "primary": PRIMARY, "secondary": SECONDARY, "tags": s.TAGS},
    required=("name", "primary", "secondary"),
)
UPDATE = CREATE
PATCH = s.obj(
    {
        "name": s.string(nullable=True),
        "primary": s.obj(
            {"cert": s.patch_of(CERT), "extJwt": s.patch_of(EXT_JWT), "updb": s.patch_of(UPDB)}, nullable=True
        ),
        "secondary": s.patch_of(SECONDARY) | {"type": ["object", "null"]},
        "tags": s.TAGS,
    }
)

BODIES = Bodies(CREATE, UPDATE, PATCH)
