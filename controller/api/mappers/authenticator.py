"""Authenticators on the wire, and the identity view's ``authenticators`` map."""

from __future__ import annotations

from controller.api.mappers.entity import ref, render
from controller.auth.password import UPDB


def authenticator_view(record: dict, *, authenticators, identities) -> dict:
    out = render(authenticators, record)
    out.update(
        {
            "identity": ref(identities, record["identity_id"]),
            "fingerprint": record.get("fingerprint"),
            "isIssuedByNetwork": bool(record.get("is_issued_by_network")),
            "isExtendRequested": bool(record.get("is_extend_requested")),
            "isKeyRollRequested": bool(record.get("is_key_roll_requested")),
            "extendRequestedAt": record.get("extend_requested_at"),
            "lastAuthResolvedToRoot": bool(record.get("last_auth_resolved_to_root")),
            "lastExtendRolledKeys": bool(record.get("last_extend_rolled_keys")),
        }
    )
    if record["method"] != UPDB:
        out.pop("username", None)
    if record["method"] != "cert":
        out.pop("certPem", None)
        out.pop("fingerprint", None)
    return out


def authenticators_summary(identity_id: str, *, authenticators) -> dict:
    """The identity view's ``authenticators`` map."""
    out: dict = {}
    for record in authenticators.of_identity(identity_id):
        if record["method"] == UPDB:
            out[UPDB] = {"id": record["id"], "username": record.get("username")}
        elif record["method"] == "cert":
            out["cert"] = {"id": record["id"], "fingerprint": record.get("fingerprint")}
    return out
