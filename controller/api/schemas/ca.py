"""Certificate authorities: PATCH overlays the ``externalIdClaim`` subfields it names."""

from __future__ import annotations

from controller.api.schemas import Bodies
from controller.model import schema as s
from controller.pki import claims

_CLAIM_PROPS = {
    "index": s.integer(nullable=True),
    "location": s.enum(*claims.LOCATIONS, nullable=True),
    "matcher": s.enum(*claims.MATCHERS, nullable=True),
    "matcherCriteria": s.string(nullable=True),
    "parser": s.enum(*claims.PARSERS, nullable=True),
    "parserCriteria": s.string(nullable=True),
}
CLAIM = s.obj(
    _CLAIM_PROPS,
    required=("location", "matcher", "matcherCriteria", "parser", "parserCriteria", "index"),
    nullable=True,
)
CLAIM_PATCH = s.obj(_CLAIM_PROPS, nullable=True)
_COMMON = {
    "name": s.string(),
    "tags": s.TAGS,
    "identityRoles": s.ATTRIBUTES,
    "identityNameFormat": s.string(),
    "isAuthEnabled": s.BOOLEAN,
    "isAutoCaEnrollmentEnabled": s.BOOLEAN,
    "isOttCaEnrollmentEnabled": s.BOOLEAN,
    "externalIdClaim": CLAIM,
}
CREATE = s.obj(
    {**_COMMON, "certPem": s.string()},
    required=(
        "name",
        "certPem",
        "isAutoCaEnrollmentEnabled",
        "isOttCaEnrollmentEnabled",
        "isAuthEnabled",
        "identityRoles",
    ),
)
UPDATE = s.obj(
    dict(_COMMON),
    required=(
        "name",
        "isAutoCaEnrollmentEnabled",
        "isOttCaEnrollmentEnabled",
        "isAuthEnabled",
        "identityRoles",
        "identityNameFormat",
    ),
)
PATCH = s.with_props(s.patch_of(s.without(UPDATE, "externalIdClaim")), externalIdClaim=CLAIM_PATCH)

BODIES = Bodies(CREATE, UPDATE, PATCH)
