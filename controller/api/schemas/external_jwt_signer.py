"""External JWT signers."""

from __future__ import annotations

from controller.api.schemas import Bodies
from controller.model import schema as s
from controller.model.external_jwt_signer import TARGET_TOKENS

NULLABLE_STRING = s.string(nullable=True)
_FIELDS = {
    "audience": NULLABLE_STRING,
    "certPem": NULLABLE_STRING,
    "claimsProperty": NULLABLE_STRING,
    "clientId": NULLABLE_STRING,
    "enabled": s.BOOLEAN,
    "enrollAttributeClaimsSelector": NULLABLE_STRING,
    "enrollAuthPolicyId": NULLABLE_STRING,
    "enrollNameClaimsSelector": NULLABLE_STRING,
    "enrollToCertEnabled": {"type": ["boolean", "null"]},
    "enrollToTokenEnabled": {"type": ["boolean", "null"]},
    "externalAuthUrl": NULLABLE_STRING,
    "issuer": s.string(),
    "jwksEndpoint": NULLABLE_STRING,
    "kid": NULLABLE_STRING,
    "name": s.string(),
    "scopes": {"type": ["array", "null"], "items": {"type": "string"}},
    "tags": s.TAGS,
    "targetToken": s.enum(*TARGET_TOKENS, nullable=True),
    "useExternalId": {"type": ["boolean", "null"]},
}
CREATE = s.obj(dict(_FIELDS), required=("name", "enabled", "issuer", "audience"))
UPDATE = s.obj(dict(_FIELDS), required=("name", "enabled", "issuer"))
PATCH = s.patch_of(UPDATE)

BODIES = Bodies(CREATE, UPDATE, PATCH)
