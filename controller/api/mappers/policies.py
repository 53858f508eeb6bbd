"""Service, edge router and service edge router policies on the wire (role lists and their display)."""

from __future__ import annotations

from controller.api.mappers.entity import render
from controller.model.base import snake
from controller.policy.roles import roles_display


def service_policy_view(ctl, record: dict) -> dict:
    return _policy_view(ctl, ctl.service_policies, record)


def edge_router_policy_view(ctl, record: dict) -> dict:
    out = _policy_view(ctl, ctl.edge_router_policies, record)
    out["isSystem"] = bool(record.get("is_system"))
    return out


def service_edge_router_policy_view(ctl, record: dict) -> dict:
    return _policy_view(ctl, ctl.service_edge_router_policies, record)


def _policy_view(ctl, policies, record: dict) -> dict:
    out = render(policies, record)
    out["semantic"] = record.get("semantic")
    for wire, kind in policies.role_lists:
        roles = record.get(snake(wire)) or []
        out[wire] = roles
        out[wire + "Display"] = roles_display(roles, ctl.network.name_of(kind))
    return out
