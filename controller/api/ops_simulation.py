"""Control endpoints of simulation mode: the clock, injected faults and faults on routers' edge messages (admin only)."""

from __future__ import annotations

from controller.api.call import Call, Created
from controller.api.envelope import UNLIMITED
from controller.api.operations import MANAGEMENT, Operation
from controller.clock import rfc3339
from controller.model import schema as s
from controller.simulation import DIRECTIONS
from controller.store.query import Listing

ADVANCE = s.obj({"seconds": {"type": "number", "minimum": 0}}, required=("seconds",))
FAULT = s.obj(
    {
        "path": s.string(min_length=1),
        "method": s.enum("GET", "POST", "PUT", "PATCH", "DELETE", nullable=True),
        "status": s.integer(400, 599, nullable=True),
        "latencyMs": s.integer(0, 60000, nullable=True),
        "drop": {"type": ["boolean", "null"]},
        "count": s.integer(1, nullable=True),
    }
)

ROUTER_FAULT = {
    **s.obj(
        {
            "router": s.string(min_length=1),
            "direction": s.enum(*DIRECTIONS, nullable=True),
            "contentTypes": {"type": ["array", "null"], "items": {"type": "string", "minLength": 1}, "maxItems": 64},
            "drop": {"type": ["boolean", "null"]},
            "latencyMs": s.integer(0, 60000, nullable=True),
            "seconds": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 366 * 86400},
        },
        required=("router",),
    ),
    "additionalProperties": False,
}


def get_clock(call: Call, *, clock) -> dict:
    return {"now": rfc3339(clock.now())}


def advance_clock(call: Call, *, clock) -> dict:
    clock.advance(seconds=call.body["seconds"])
    return {"now": rfc3339(clock.now())}


def list_faults(call: Call, *, faults) -> Listing:
    items = [fault.view() for fault in faults.list()]
    return Listing(items, {"limit": UNLIMITED, "offset": 0, "totalCount": len(items)})


def create_fault(call: Call, *, faults) -> Created:
    body = call.body
    fault = faults.add(
        body.get("path") or ".*",
        method=body.get("method"),
        status=body.get("status"),
        latency_ms=body.get("latencyMs") or 0,
        drop=bool(body.get("drop")),
        count=body.get("count"),
    )
    return Created("simulation/faults", fault.id)


def delete_fault(call: Call, *, faults) -> None:
    faults.remove(call.param())


def clear_faults(call: Call, *, faults) -> None:
    faults.remove()


def list_router_faults(call: Call, *, router_faults) -> Listing:
    now = router_faults.clock.now()
    items = [fault.view(now, router_faults.applied(fault)) for fault in router_faults.list()]
    return Listing(items, {"limit": UNLIMITED, "offset": 0, "totalCount": len(items)})


def detail_router_fault(call: Call, *, router_faults) -> dict:
    fault = router_faults.get(call.param())
    return fault.view(router_faults.clock.now(), router_faults.applied(fault))


def create_router_fault(call: Call, *, router_faults) -> Created:
    body = call.body
    fault = router_faults.add(
        body["router"],
        direction=body.get("direction") or "both",
        content_types=body.get("contentTypes") or (),
        drop=bool(body.get("drop")),
        latency_ms=body.get("latencyMs") or 0,
        seconds=body.get("seconds"),
    )
    return Created("simulation/router-faults", fault.id)


def delete_router_fault(call: Call, *, router_faults) -> None:
    router_faults.remove(call.param())


def clear_router_faults(call: Call, *, router_faults) -> None:
    router_faults.remove()


def operations() -> list[Operation]:
    tag = "Simulation"
    api = (MANAGEMENT,)
    return [
        Operation(
            "detailSimulationClock",
            "GET",
            "/simulation/clock",
            get_clock,
            apis=api,
            tag=tag,
            summary="The controller's current time",
        ),
        Operation(
            "advanceSimulationClock",
            "POST",
            "/simulation/clock/advance",
            advance_clock,
            apis=api,
            body=ADVANCE,
            tag=tag,
            summary="Move the controller's clock forward",
        ),
        Operation(
            "listSimulationFaults",
            "GET",
            "/simulation/faults",
            list_faults,
            apis=api,
            reply="list",
            tag=tag,
            summary="List injected faults",
        ),
        Operation(
            "createSimulationFault",
            "POST",
            "/simulation/faults",
            create_fault,
            apis=api,
            body=FAULT,
            reply="create",
            status=201,
            tag=tag,
            summary="Inject a fault on matching routes",
        ),
        Operation(
            "deleteSimulationFault",
            "DELETE",
            "/simulation/faults/{id}",
            delete_fault,
            apis=api,
            reply="empty",
            tag=tag,
            summary="Remove one injected fault",
        ),
        Operation(
            "deleteSimulationFaults",
            "DELETE",
            "/simulation/faults",
            clear_faults,
            apis=api,
            reply="empty",
            tag=tag,
            summary="Remove every injected fault",
        ),
        Operation(
            "listSimulationRouterFaults",
            "GET",
            "/simulation/router-faults",
            list_router_faults,
            apis=api,
            reply="list",
            tag=tag,
            summary="List faults on routers' edge messages, with their remaining time and hits",
        ),
        Operation(
            "detailSimulationRouterFault",
            "GET",
            "/simulation/router-faults/{id}",
            detail_router_fault,
            apis=api,
            tag=tag,
            summary="One fault on a router's edge messages",
        ),
        Operation(
            "createSimulationRouterFault",
            "POST",
            "/simulation/router-faults",
            create_router_fault,
            apis=api,
            body=ROUTER_FAULT,
            reply="create",
            status=201,
            tag=tag,
            summary="Drop or delay one router's edge messages for a while (the controller's clock)",
        ),
        Operation(
            "deleteSimulationRouterFault",
            "DELETE",
            "/simulation/router-faults/{id}",
            delete_router_fault,
            apis=api,
            reply="empty",
            tag=tag,
            summary="Remove one fault on a router's edge messages",
        ),
        Operation(
            "deleteSimulationRouterFaults",
            "DELETE",
            "/simulation/router-faults",
            clear_router_faults,
            apis=api,
            reply="empty",
            tag=tag,
            summary="Remove every fault on routers' edge messages",
        ),
    ]
