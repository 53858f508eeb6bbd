"""The fabric API's wire views (``/fabric/v1``): routers, services, terminators, links and circuits.

Routers, services and terminators are the same records the edge management API shows, in the fabric
shapes (``connected`` rather than ``isOnline``, no edge fields). Links and circuits are the live records
of ``controller/fabric/state.py``, rendered as the real ``linkDetail`` and ``circuitDetail``.
"""

from __future__ import annotations

from controller.api.mappers.entity import base_view, entity_ref, ref
from controller.clock import rfc3339
from controller.fabric.state import Circuit, Link
from controller.store.query import Field, FieldSet

#: the sub-resources the real fabric API links from a router and a service
ROUTER_LINKS = ("terminators",)
SERVICE_LINKS = ("terminators",)


def version_info_view(reported: dict) -> dict:
    """``versionInfo``: the build a router reported when it came online (every field a string)."""
    return {key: str(reported.get(key) or "") for key in ("version", "revision", "buildDate", "os", "arch")}


def fabric_router_view(record: dict, *, router_presence, fabric) -> dict:
    """A router of any kind (edge, transit, plain) as ``routerDetail``."""
    router_id = record["id"]
    connected = router_presence.is_online(router_id)
    out = base_view(record, "routers", ROUTER_LINKS)
    out.update(
        {
            "name": record["name"],
            "fingerprint": record.get("fingerprint"),
            "connected": connected,
            "cost": record.get("cost") or 0,
            "noTraversal": bool(record.get("no_traversal")),
            "disabled": bool(record.get("disabled")),
            "listenerAddresses": _listener_addresses(fabric, router_id) if connected else [],
            "versionInfo": version_info_view(router_presence.version_info(router_id)) if connected else None,
            "interfaces": [],
            "ctrlChanListeners": record.get("ctrl_chan_listeners") or {},
            "configs": record.get("configs") or [],
        }
    )
    return out


def _listener_addresses(fabric, router_id: str) -> list[dict]:
    """The address a connected router listens on for links (``{address: "tls:host:port", protocol}``)."""
    url = fabric.listeners().get(router_id)
    if not url:
        return []
    scheme, _, rest = url.partition("://")
    return [{"address": f"{scheme}:{rest}", "protocol": scheme}]


def fabric_service_view(record: dict) -> dict:
    """A service as ``serviceDetail``: the fabric part only."""
    out = base_view(record, "services", SERVICE_LINKS)
    out.update(
        {
            "name": record["name"],
            "terminatorStrategy": record.get("terminator_strategy") or "smartrouting",
            "maxIdleTimeMillis": record.get("max_idle_time_millis") or 0,
        }
    )
    return out


def fabric_terminator_view(record: dict, *, terminator_view, routers) -> dict:
    """``terminatorDetail``: the edge view's fields, with the router as the fabric names it."""
    out = terminator_view(record)
    out["router"] = ref(routers, record["router_id"])
    out["cost"] = record.get("cost") or 0
    out["instanceId"] = record.get("instance_id") or record.get("identity") or ""
    return out


# -- links -----------------------------------------------------------------------------
def link_record(link: Link) -> dict:
    """A link as a filterable record (the listing's filter and sort read these keys)."""
    return {"id": link.id, "created_at": rfc3339(link.created_at), "updated_at": rfc3339(link.created_at), "link": link}


def _link(r: dict) -> Link:
    return r["link"]


LINK_FIELDS = FieldSet(
    (
        Field("protocol", "string", lambda r: _link(r).protocol),
        Field("sourceRouter", "string", lambda r: _link(r).src_router_id),
        Field("destRouter", "string", lambda r: _link(r).dst_router_id),
        Field("state", "string", lambda r: _link(r).state),
        Field("down", "bool", lambda r: _link(r).down),
        Field("staticCost", "int", lambda r: _link(r).static_cost),
        Field("cost", "int", lambda r: _link(r).cost),
        Field("iteration", "int", lambda r: _link(r).iteration),
    ),
    tags=False,
)


def _router_ref(routers, router_id: str) -> dict:
    record = routers.find(router_id)
    return entity_ref("routers", router_id, record.get("name") if record else None)


def link_view(record: dict, *, routers) -> dict:
    """``linkDetail``: latencies in nanoseconds, the cost the path selection uses."""
    link = _link(record)
    return {
        "id": link.id,
        "protocol": link.protocol,
        "sourceRouter": _router_ref(routers, link.src_router_id),
        "destRouter": _router_ref(routers, link.dst_router_id),
        "state": link.state,
        "down": link.down,
        "staticCost": link.static_cost,
        "sourceLatency": link.src_latency_ns,
        "destLatency": link.dst_latency_ns,
        "cost": link.cost,
        "iteration": link.iteration,
        "connections": [],
    }


# -- circuits --------------------------------------------------------------------------
def circuit_record(circuit: Circuit) -> dict:
    created = rfc3339(circuit.created_at)
    return {
        "id": circuit.id,
        "created_at": created,
        "updated_at": created,
        "tags": dict(circuit.tags),
        "circuit": circuit,
    }


def _circuit(r: dict) -> Circuit:
    return r["circuit"]


CIRCUIT_FIELDS = FieldSet(
    (
        Field("clientId", "string", lambda r: _circuit(r).client_id),
        Field("service", "string", lambda r: _circuit(r).service_id),
        Field("terminator", "string", lambda r: _circuit(r).terminator_id),
    )
)


def circuit_view(record: dict, *, routers, services, terminators) -> dict:
    """``circuitDetail``: the service, the terminator and the path (routers, then the links between them)."""
    circuit = _circuit(record)
    out = base_view(record, "circuits")
    terminator = terminators.find(circuit.terminator_id)
    out.update(
        {
            "clientId": circuit.client_id,
            "service": ref(services, circuit.service_id),
            "terminator": entity_ref(
                "terminators", circuit.terminator_id, terminator.get("name") if terminator else None
            ),
            "path": {
                "nodes": [_router_ref(routers, router_id) for router_id in circuit.path_routers],
                "links": [entity_ref("links", link_id, None) for link_id in circuit.path_links],
            },
        }
    )
    return out


# -- where a dial entering at a router goes ---------------------------------------------------
def path_candidate_view(candidate, chance: float, *, routers) -> dict:
    """One terminator of a service as a dial entering at a router sees it (``getRouterServicePaths``)."""
    terminator, path = candidate.terminator, candidate.path
    own = int(terminator.get("cost") or 0)
    return {
        "id": terminator["id"],
        "router": _router_ref(routers, terminator.get("router_id") or ""),
        "binding": terminator.get("binding") or "",
        "address": terminator.get("address") or "",
        "cost": own,
        "precedence": terminator.get("precedence") or "default",
        "usable": path is not None,
        "reason": candidate.reason,
        "chance": round(chance, 6),
        "pathCost": path.cost if path else None,
        "totalCost": own + path.cost if path else None,
        "path": {
            "nodes": [_router_ref(routers, router_id) for router_id in path.routers],
            "links": [entity_ref("links", link_id, None) for link_id in path.links],
        }
        if path
        else None,
    }
