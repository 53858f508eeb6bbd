"""Third-party CAs on the wire."""

from __future__ import annotations

from controller.api.mappers.entity import render
from controller.pki import claims


def ca_view(record: dict, *, cas) -> dict:
    out = render(cas, record)
    out.update(
        {
            "fingerprint": record.get("fingerprint"),
            "isVerified": bool(record.get("is_verified")),
            "verificationToken": record.get("verification_token"),
            "identityRoles": record.get("identity_roles") or [],
        }
    )
    if record.get("external_id_claim"):
        out["externalIdClaim"] = claims.to_wire(record["external_id_claim"])
    return out
