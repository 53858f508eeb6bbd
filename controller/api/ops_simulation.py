"""Control endpoints of simulation mode: the clock, injected faults, faults on routers' edge messages and a
cluster member cut off from the others (admin only)."""

from __future__ import annotations

from controller import errors
from controller.api.call import Call, Created
from controller.api.envelope import UNLIMITED
from controller.api.operations import MANAGEMENT, Operation, operation_defaults
from controller.api.schemas.simulation import ADVANCE, CLUSTER_FAULT, FAULT, ROUTER_FAULT
from controller.clock import rfc3339
from controller.store.query import Listing


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


def _in_cluster(cluster):
    if cluster is None:
        raise errors.BadRequest(errors.SERVER_NOT_RUNNING_IN_HA_MODE)
    return cluster


def list_cluster_faults(call: Call, *, cluster) -> Listing:
    items = _in_cluster(cluster).faults()
    return Listing(items, {"limit": UNLIMITED, "offset": 0, "totalCount": len(items)})


def create_cluster_fault(call: Call, *, cluster) -> Created:
    fault = _in_cluster(cluster).cut_off(call.body.get("members"))
    return Created("simulation/cluster-faults", fault["id"])


def delete_cluster_fault(call: Call, *, cluster) -> None:
    _in_cluster(cluster).reconnect(call.param())


def clear_cluster_faults(call: Call, *, cluster) -> None:
    _in_cluster(cluster).reconnect()


def operations() -> list[Operation]:
    op = operation_defaults(apis=(MANAGEMENT,), tag="Simulation")
    return [
        op("detailSimulationClock", "GET /simulation/clock", get_clock, "The controller's current time"),
        op(
            "advanceSimulationClock",
            "POST /simulation/clock/advance",
            advance_clock,
            "Move the controller's clock forward",
            body=ADVANCE,
        ),
        op("listSimulationFaults", "GET /simulation/faults", list_faults, "List injected faults", reply="list"),
        op(
            "createSimulationFault",
            "POST /simulation/faults",
            create_fault,
            "Inject a fault on matching routes",
            body=FAULT,
            reply="create",
            status=201,
        ),
        op(
            "deleteSimulationFault",
            "DELETE /simulation/faults/{id}",
            delete_fault,
            "Remove one injected fault",
            reply="empty",
        ),
        op(
            "deleteSimulationFaults",
            "DELETE /simulation/faults",
            clear_faults,
            "Remove every injected fault",
            reply="empty",
        ),
        op(
            "listSimulationRouterFaults",
            "GET /simulation/router-faults",
            list_router_faults,
            "List faults on routers' edge messages, with their remaining time and hits",
            reply="list",
        ),
        op(
            "detailSimulationRouterFault",
            "GET /simulation/router-faults/{id}",
            detail_router_fault,
            "One fault on a router's edge messages",
        ),
        op(
            "createSimulationRouterFault",
            "POST /simulation/router-faults",
            create_router_fault,
            "Drop or delay one router's edge messages for a while (the controller's clock)",
            body=ROUTER_FAULT,
            reply="create",
            status=201,
        ),
        op(
            "deleteSimulationRouterFault",
            "DELETE /simulation/router-faults/{id}",
            delete_router_fault,
            "Remove one fault on a router's edge messages",
            reply="empty",
        ),
        op(
            "deleteSimulationRouterFaults",
            "DELETE /simulation/router-faults",
            clear_router_faults,
            "Remove every fault on routers' edge messages",
            reply="empty",
        ),
        *_cluster_fault_operations(op),
    ]


def _cluster_fault_operations(op) -> list[Operation]:
    """``/simulation/cluster-faults``: a cluster member cut off from the others while it runs."""
    return [
        op(
            "listSimulationClusterFaults",
            "GET /simulation/cluster-faults",
            list_cluster_faults,
            "List the cut-offs of this cluster member's raft traffic",
            reply="list",
        ),
        op(
            "createSimulationClusterFault",
            "POST /simulation/cluster-faults",
            create_cluster_fault,
            "Cut this cluster member off from the others (or from the members named) without stopping it",
            body=CLUSTER_FAULT,
            reply="create",
            status=201,
        ),
        op(
            "deleteSimulationClusterFault",
            "DELETE /simulation/cluster-faults/{id}",
            delete_cluster_fault,
            "Heal one cut-off",
            reply="empty",
        ),
        op(
            "deleteSimulationClusterFaults",
            "DELETE /simulation/cluster-faults",
            clear_cluster_faults,
            "Reconnect this cluster member to every other",
            reply="empty",
        ),
    ]
