"""Terminators on the wire."""

from __future__ import annotations

from controller.api.mappers.entity import ref, render


def terminator_view(record: dict, *, terminators, services, routers) -> dict:
    out = render(terminators, record)
    out.update(
        {
            "serviceId": record["service_id"],
            "service": ref(services, record["service_id"]),
            "routerId": record["router_id"],
            "router": ref(routers, record["router_id"]),
            "dynamicCost": record.get("cost") or 0,
            "hostId": record.get("host_id") or "",
            "instanceId": record.get("instance_id") or "",
        }
    )
    return out
