"""Sessions on the wire (client and management APIs)."""

from __future__ import annotations

from controller.api.mappers.entity import base_view, ref


def session_edge_routers(identity_id: str, service_id: str, *, edge_router_session_view, sessions) -> list[dict]:
    """The edge routers a session may use, as a session shows them."""
    return [edge_router_session_view(r) for r in sessions.usable_routers(identity_id, service_id)]


def session_view(
    record: dict, management: bool = False, *, api_sessions, session_edge_routers, sessions, services, service_policies
) -> dict:
    out = base_view(record, sessions.collection)
    out.update(
        {
            "apiSessionId": record["api_session_id"],
            "apiSession": ref(api_sessions, record["api_session_id"]),
            "identityId": record["identity_id"],
            "serviceId": record["service_id"],
            "service": ref(services, record["service_id"]),
            "token": record["token"],
            "type": record["type"],
            "edgeRouters": session_edge_routers(record["identity_id"], record["service_id"]),
        }
    )
    if management:
        out["servicePolicies"] = [ref(service_policies, p) for p in record.get("service_policies") or []]
    return out
