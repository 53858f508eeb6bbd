"""Sessions on the wire (client and management APIs)."""

from __future__ import annotations

from controller.api.mappers.router import edge_router_session_view
from controller.model.views import base_view


def session_edge_routers(ctl, identity_id: str, service_id: str) -> list[dict]:
    """The edge routers a session may use, as a session shows them."""
    routers = ctl.edge_routers
    return [edge_router_session_view(routers, r) for r in ctl.sessions.usable_routers(identity_id, service_id)]


def session_view(ctl, record: dict, management: bool = False) -> dict:
    out = base_view(record, ctl.sessions.collection)
    out.update(
        {
            "apiSessionId": record["api_session_id"],
            "apiSession": ctl.ref("api-sessions", record["api_session_id"]),
            "identityId": record["identity_id"],
            "serviceId": record["service_id"],
            "service": ctl.services.ref(record["service_id"]),
            "token": record["token"],
            "type": record["type"],
            "edgeRouters": session_edge_routers(ctl, record["identity_id"], record["service_id"]),
        }
    )
    if management:
        out["servicePolicies"] = [ctl.service_policies.ref(p) for p in record.get("service_policies") or []]
    return out
