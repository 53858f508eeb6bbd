"""The current identity's TOTP MFA enrollment on the wire (links depend on its state)."""

from __future__ import annotations

SELF = "./current-identity/mfa"


def mfa_view(record: dict, *, mfas) -> dict:
    links = {"self": {"href": SELF}, "current-identity": {"href": "./current-identity"}}
    verified = bool(record.get("is_verified"))
    if verified:
        links["recovery-codes"] = {"href": SELF + "/recovery-codes"}
    else:
        links["verify"] = {"href": SELF + "/verify"}
        links["qr"] = {"href": SELF + "/qr-code"}
    out = _base(record, links)
    out["isVerified"] = verified
    if not verified:
        out["recoveryCodes"] = list(record.get("recovery_codes") or [])
        out["provisioningUrl"] = mfas.provisioning_url(record)
    return out


def recovery_view(record: dict) -> dict:
    out = _base(record, {"self": {"href": SELF + "/recovery-codes"}, "mfa": {"href": SELF}})
    out["recoveryCodes"] = list(record.get("recovery_codes") or [])
    return out


def mfa_created_view(record: dict) -> dict:
    return {"_links": {"self": {"href": SELF}}, "id": record["mfa_id"]}


def _base(record: dict, links: dict) -> dict:
    return {
        "_links": links,
        "id": record["mfa_id"],
        "createdAt": record["created_at"],
        "updatedAt": record["updated_at"],
        "tags": record.get("tags") or {},
    }
