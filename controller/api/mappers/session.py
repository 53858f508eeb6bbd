"""Sessions on the wire (client and management APIs)."""

from __future__ import annotations

from controller.api.mappers.entity import base_view, ref, table_ref
from controller.api.mappers.router import edge_router_session_view


def session_edge_routers(ctl, identity_id: str, service_id: str) -> list[dict]:
    """The edge routers a session may use, as a session shows them."""
    return [edge_router_session_view(ctl, r) for r in ctl.sessions.usable_routers(identity_id, service_id)]


def session_view(ctl, record: dict, management: bool = False) -> dict:
    out = base_view(record, ctl.sessions.collection)
    out.update(
        {
            "apiSessionId": record["api_session_id"],
            "apiSession": table_ref(ctl, "api-sessions", record["api_session_id"]),
            "identityId": record["identity_id"],
            "serviceId": record["service_id"],
            "service": ref(ctl.services, record["service_id"]),
            "token": record["token"],
            "type": record["type"],
            "edgeRouters": session_edge_routers(ctl, record["identity_id"], record["service_id"]),
        }
    )
    if management:
        out["servicePolicies"] = [ref(ctl.service_policies, p) for p in record.get("service_policies") or []]
    return out
