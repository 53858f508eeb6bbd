"""Routers on the wire: management views, and edge routers as the client API and a session show them."""

from __future__ import annotations

from controller.api.mappers.entity import base_view, render

#: the router build the real controller reports (a router here reports none)
VERSION_INFO = {"os": "", "arch": "", "version": "", "revision": "", "buildDate": ""}


def router_view(ctl, record: dict) -> dict:
    return _with_router_fields(ctl, render(ctl.routers, record), record)


def transit_router_view(ctl, record: dict) -> dict:
    return _with_router_fields(ctl, render(ctl.transit_routers, record), record)


def edge_router_view(ctl, record: dict) -> dict:
    out = _with_router_fields(ctl, render(ctl.edge_routers, record), record)
    out.update(common_fields(ctl, record))
    out.update(
        {
            "isTunnelerEnabled": bool(record.get("is_tunneler_enabled")),
            "certPem": record.get("cert_pem"),
            "roleAttributes": record.get("role_attributes") or [],
            "versionInfo": dict(VERSION_INFO),
        }
    )
    out.update(out["versionInfo"])  # the official documents also require these at the top level
    return out


def edge_router_client_view(ctl, record: dict) -> dict:
    """The client API's edge router: common fields only."""
    return {**base_view(record, ctl.edge_routers.collection), **common_fields(ctl, record)}


def edge_router_session_view(ctl, record: dict) -> dict:
    """A session's edge router: common fields plus ``urls`` (the supported protocols)."""
    common = common_fields(ctl, record)
    return {"id": record["id"], **common, "urls": dict(common["supportedProtocols"])}


def common_fields(ctl, record: dict) -> dict:
    """The edge router fields every view of one shares (presence from the router links)."""
    presence, router_id = ctl.router_presence, record["id"]
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


def _with_router_fields(ctl, out: dict, record: dict) -> dict:
    """Fields of every router kind: its pending enrollment, verification, presence."""
    enrollment = ctl.routers.enrollment_of(record["id"]) or {}
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
            "isOnline": ctl.router_presence.is_online(record["id"]),
            "interfaces": [],
            "unverifiedCertPem": None,
            "unverifiedFingerprint": None,
            "ctrlChanListeners": record.get("ctrl_chan_listeners") or {},
            "configs": record.get("configs") or [],
        }
    )
    return out
