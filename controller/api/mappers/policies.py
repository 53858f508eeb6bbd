"""Service, edge router and service edge router policies on the wire (role lists and their display)."""

from __future__ import annotations

from controller.api.mappers.entity import render
from controller.model.base import snake
from controller.policy.roles import roles_display


def service_policy_view(record: dict, *, service_policies, policy_view) -> dict:
    return policy_view(service_policies, record)


def edge_router_policy_view(record: dict, *, edge_router_policies, policy_view) -> dict:
    out = policy_view(edge_router_policies, record)
    out["isSystem"] = bool(record.get("is_system"))
    return out


def service_edge_router_policy_view(record: dict, *, service_edge_router_policies, policy_view) -> dict:
    return policy_view(service_edge_router_policies, record)


def policy_view(policies, record: dict, *, network) -> dict:
    out = render(policies, record)
    out["semantic"] = record.get("semantic")
    for wire, kind in policies.role_lists:
        roles = record.get(snake(wire)) or []
        out[wire] = roles
        out[wire + "Display"] = roles_display(roles, network.name_of(kind))
    return out
