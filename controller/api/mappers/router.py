"""Routers on the wire: management views, and edge routers as the client API and a session show them."""

from __future__ import annotations

from controller.api.mappers.entity import base_view, render
from controller.api.mappers.fabric import version_info_view


def router_view(record: dict, *, router_fields, routers) -> dict:
    return router_fields(render(routers, record), record)


def transit_router_view(record: dict, *, router_fields, transit_routers) -> dict:
    return router_fields(render(transit_routers, record), record)


def edge_router_view(record: dict, *, router_fields, common_fields, edge_routers, router_presence) -> dict:
    out = router_fields(render(edge_routers, record), record)
    out.update(common_fields(record))
    out.update(
        {
            "isTunnelerEnabled": bool(record.get("is_tunneler_enabled")),
            "certPem": record.get("cert_pem"),
            "roleAttributes": record.get("role_attributes") or [],
            # what the router reported when it came online (every field empty while it is offline)
            "versionInfo": version_info_view(router_presence.version_info(record["id"])),
        }
    )
    out.update(out["versionInfo"])  # the official documents also require these at the top level
    return out


def edge_router_client_view(record: dict, *, common_fields, edge_routers) -> dict:
    """The client API's edge router: common fields only."""
    return {**base_view(record, edge_routers.collection), **common_fields(record)}


def edge_router_session_view(record: dict, *, common_fields) -> dict:
    """A session's edge router: common fields plus ``urls`` (the supported protocols)."""
    common = common_fields(record)
    return {"id": record["id"], **common, "urls": dict(common["supportedProtocols"])}


def common_fields(record: dict, *, router_presence) -> dict:
    """The edge router fields every view of one shares (presence from the router links)."""
    presence, router_id = router_presence, record["id"]
    online = presence.is_online(router_id)
    return {
        "appData": record.get("app_data") or {},
        "cost": record.get("cost") or 0,
        "disabled": bool(record.get("disabled")),
        "hostname": presence.hostname(router_id),
        "isOnline": online,
        "name": record["name"],
        "noTraversal": bool(record.get("no_traversal")),
        "supportedProtocols": presence.protocols(router_id),
        "syncStatus": "SYNC_DONE" if online else "SYNC_UNKNOWN",
    }


def router_fields(out: dict, record: dict, *, routers, router_presence) -> dict:
    """Fields of every router kind: its pending enrollment, verification, presence."""
    enrollment = routers.enrollment_of(record["id"]) or {}
    out.update(
        {
            "enrollmentToken": enrollment.get("token"),
            "enrollmentJwt": enrollment.get("jwt"),
            "enrollmentCreatedAt": enrollment.get("created_at"),
            "enrollmentExpiresAt": enrollment.get("expires_at"),
        }
    )
    out.update(
        {
            "fingerprint": record.get("fingerprint"),
            "isVerified": bool(record.get("is_verified")),
            "isOnline": router_presence.is_online(record["id"]),
            "interfaces": [],
            "unverifiedCertPem": None,
            "unverifiedFingerprint": None,
            "ctrlChanListeners": record.get("ctrl_chan_listeners") or {},
            "configs": record.get("configs") or [],
        }
    )
    return out
