"""Edge routers as the client API and a session show them."""

from __future__ import annotations

from controller.model.views import base_view


def edge_router_client_view(routers, record: dict) -> dict:
    """The client API's edge router: common fields only."""
    return {**base_view(record, routers.collection), **routers.common_fields(record)}


def edge_router_session_view(routers, record: dict) -> dict:
    """A session's edge router: common fields plus ``urls`` (the supported protocols)."""
    common = routers.common_fields(record)
    return {"id": record["id"], **common, "urls": dict(common["supportedProtocols"])}
