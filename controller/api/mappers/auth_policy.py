"""Authentication policies on the wire (primary and secondary factors camelCased)."""

from __future__ import annotations

from controller.api.mappers.entity import render
from controller.model.auth_policy import to_wire


def auth_policy_view(record: dict, *, auth_policies) -> dict:
    out = render(auth_policies, record)
    out["primary"] = to_wire(record["primary"])
    out["secondary"] = to_wire(record["secondary"])
    return out
