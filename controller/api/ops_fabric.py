"""The fabric management API at ``/fabric/v1``, beside edge management, as the Admin Console reads it.

Routers, services and terminators are the records edge management serves, in the fabric shapes
(``controller/api/mappers/fabric.py``); links and circuits are the live ones of ``controller/fabric/state.py``
(memory only, as the real controller keeps them). Every operation is admin only, with the same
sessions (``zt-session`` or an OIDC bearer token), filter language, paging and error envelope as
edge management.
"""

from __future__ import annotations

import re
import sys
import traceback
import warnings
from functools import partial

from controller import errors
from controller.api.call import Call, Created
from controller.api.crud import LIST_QUERY, crud, related
from controller.api.mappers.entity import listing, ref
from controller.api.mappers.fabric import (
    CIRCUIT_FIELDS,
    LINK_FIELDS,
    circuit_record,
    fabric_router_view,
    fabric_service_view,
    fabric_terminator_view,
    link_record,
    path_candidate_view,
)
from controller.api.operations import FABRIC, Operation, operation_defaults
from controller.api.ops_operations import (
    check_data_integrity,
    create_database_snapshot,
    data_integrity_results,
    fix_data_integrity,
)
from controller.api.schemas import fabric as schemas
from controller.fabric import routing
from controller.model.router import RouterManager
from controller.model.service import ServiceManager
from controller.model.terminator import TerminatorManager
from controller.store.query import Listing, list_page

APIS = (FABRIC,)


# -- routers ---------------------------------------------------------------------------
def _check_fingerprint(call: Call, routers, router_id: str | None) -> str | None:
    """The fingerprint a fabric body sets (``ziti fabric create router``), refused when another router has it."""
    fingerprint = (call.body or {}).get("fingerprint")
    if fingerprint:
        holder = routers.find_by_fingerprint(fingerprint)
        if holder is not None and holder["id"] != router_id:
            raise errors.FieldError("fingerprint", "another router has this fingerprint", fingerprint)
    return fingerprint


def create_router(call: Call, *, routers) -> Created:
    fingerprint = _check_fingerprint(call, routers, None)
    router_id = routers.create(call.body, context=call.change)
    if fingerprint:
        routers.touch(router_id, context=call.change, fingerprint=fingerprint)
    return Created("routers", router_id)


def _write_router(call: Call, routers, write) -> None:
    router_id = call.param()
    routers.get(router_id)
    fingerprint = _check_fingerprint(call, routers, router_id)
    write(router_id, call.body, context=call.change)
    if fingerprint:
        routers.touch(router_id, context=call.change, fingerprint=fingerprint)


def update_router(call: Call, *, routers) -> None:
    _write_router(call, routers, routers.update)


def patch_router(call: Call, *, routers) -> None:
    _write_router(call, routers, routers.patch)


def router_terminators(call: Call, *, routers, terminators, fabric_terminator_view) -> Listing:
    router = routers.get(call.param())
    records = [r for r in map(terminators.find, terminators.by_router.get(router["id"])) if r]
    return listing(terminators, call.list_args(), fabric_terminator_view, candidates=records)


# -- services --------------------------------------------------------------------------
def update_service(call: Call, *, services) -> None:
    """PUT replaces the fabric fields only: a service's edge fields (configs, role attributes) stay."""
    body = call.body
    fabric_fields = {
        "name": body["name"],
        "terminatorStrategy": body.get("terminatorStrategy") or "smartrouting",
        "maxIdleTimeMillis": body.get("maxIdleTimeMillis") or 0,
        "tags": body.get("tags") or {},
    }
    services.patch(call.param(), fabric_fields, context=call.change)


def service_terminators(call: Call, *, services, terminators, fabric_terminator_view) -> Listing:
    service = services.get(call.param())
    records = terminators.of_service(service["id"])
    return listing(terminators, call.list_args(), fabric_terminator_view, candidates=records)


# -- terminators -----------------------------------------------------------------------
def _edge_terminator_body(body: dict) -> dict:
    """The fabric names of a terminator body as the terminator manager takes them."""
    out = dict(body)
    if "instanceId" in out:
        out["identity"] = out.pop("instanceId")
    if "instanceSecret" in out:
        out["identitySecret"] = out.pop("instanceSecret")
    return out


def update_terminator(call: Call, *, terminators) -> None:
    """PUT replaces what ``terminatorUpdate`` carries; the instance id and secret the router gave stay."""
    existing = terminators.get(call.param())
    body = _edge_terminator_body(call.body)
    body.setdefault("identity", existing.get("identity"))
    body.setdefault("identitySecret", existing.get("identity_secret"))
    terminators.update(call.param(), body, context=call.change)


def create_terminator(call: Call, *, terminators) -> Created:
    return Created("terminators", terminators.create(_edge_terminator_body(call.body), context=call.change))


def patch_terminator(call: Call, *, terminators) -> None:
    terminators.patch(call.param(), _edge_terminator_body(call.body), context=call.change)


# -- links -----------------------------------------------------------------------------
def list_links(call: Call, *, fabric, link_view) -> Listing:
    page = list_page([link_record(link) for link in fabric.links()], LINK_FIELDS, **call.list_args())
    return Listing([link_view(r) for r in page.items], page.pagination(), LINK_FIELDS.names())


def _link(call: Call, fabric):
    link = fabric.link(call.param())
    if link is None:
        raise errors.NotFound("link", call.param())
    return link


def detail_link(call: Call, *, fabric, link_view) -> dict:
    return link_view(link_record(_link(call, fabric)))


def patch_link(call: Call, *, fabric) -> None:
    """``down`` and ``staticCost`` as an operator sets them; path selection reads the new cost."""
    _link(call, fabric)
    changes = {}
    if call.body.get("down") is not None:
        changes["down"] = bool(call.body["down"])
    if call.body.get("staticCost") is not None:
        changes["static_cost"] = call.body["staticCost"]
    if changes:
        fabric.update_link(call.param(), **changes)


def delete_link(call: Call, *, fabric) -> None:
    _link(call, fabric)
    fabric.link_down(call.param())


# -- circuits --------------------------------------------------------------------------
def list_circuits(call: Call, *, fabric, circuit_view) -> Listing:
    records = [circuit_record(circuit) for circuit in fabric.circuits()]
    page = list_page(records, CIRCUIT_FIELDS, **call.list_args())
    return Listing([circuit_view(r) for r in page.items], page.pagination(), CIRCUIT_FIELDS.names())


def _circuit(call: Call, fabric):
    circuit = fabric.circuit(call.param())
    if circuit is None:
        raise errors.NotFound("circuit", call.param())
    return circuit


def detail_circuit(call: Call, *, fabric, circuit_view) -> dict:
    return circuit_view(circuit_record(_circuit(call, fabric)))


def delete_circuit(call: Call, *, fabric) -> None:
    _circuit(call, fabric)
    fabric.circuit_down(call.param())


# -- paths -----------------------------------------------------------------------------
def router_service_paths(call: Call, *, routers, services, terminators, fabric, router_presence, link_view) -> dict:
    """Where a dial of service ``serviceId`` entering at router ``id`` would go, by the routing dials use.

    Every terminator of the service with the cheapest live path to it (or why it cannot be used) and the
    chance the service's terminator strategy picks it; ``reachable`` is false, with a ``reason``, when none
    can be picked. Read-only: nothing is routed and no dice are thrown.
    """
    router = routers.get(call.param())
    service = services.get(call.param("serviceId"))
    router_id, strategy = router["id"], service.get("terminator_strategy") or "smartrouting"
    links = fabric.links()
    found = routing.candidates(
        router_id,
        terminators.of_service(service["id"]),
        links,
        online=router_presence.is_online,
        router_cost=routing.router_costs(routers.find),
        transit=routing.transit_allowed(routers.find),
    )
    pairs = routing.usable(found)
    odds = iter(routing.chances(strategy, pairs))
    views = [path_candidate_view(c, next(odds) if c.path is not None else 0.0, routers=routers) for c in found]
    online = router_presence.is_online(router_id)
    if not online:
        reason = f"router {router_id} is offline: no dial enters there"
    elif not found:
        reason = f"service {service['id']} has no terminators: nothing binds it"
    elif not pairs:
        reason = "no terminator can be reached: " + "; ".join(sorted({c.reason for c in found}))
    else:
        reason = ""
    used = {link_id for c in found if c.path for link_id in c.path.links}
    return {
        "router": ref(routers, router_id),
        "isOnline": online,
        "service": ref(services, service["id"]),
        "terminatorStrategy": strategy,
        "reachable": online and bool(pairs),
        "reason": reason,
        "terminators": views,
        "links": [link_view(link_record(link)) for link in links if link.id in used],
    }


# -- inspections -----------------------------------------------------------------------
#: the longest ``appRegex`` taken; a pattern is matched against app ids only (a few dozen characters)
MAX_APP_REGEX = 256


def app_pattern(text: str) -> re.Pattern:
    """``appRegex`` compiled, or a 400 naming the field (never a 500, whatever the pattern)."""
    if len(text) > MAX_APP_REGEX:
        raise errors.FieldError("appRegex", f"longer than {MAX_APP_REGEX} characters", text[:40])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "possible nested set" and the like
            return re.compile(text)
    except (re.error, RecursionError, OverflowError) as ex:
        raise errors.FieldError("appRegex", f"not a regular expression: {ex}", text[:40]) from None


def inspect(call: Call, *, instance_id, fabric, link_view) -> dict:
    """Values of the apps whose id matches ``appRegex``: this controller (``stackdump``, ``links``)."""
    pattern = app_pattern(call.body["appRegex"])
    app_id = instance_id
    values, problems = [], []
    if pattern.search(app_id):
        for name in call.body["requestedValues"]:
            key = name.lower()
            if key == "stackdump":
                values.append({"appId": app_id, "name": name, "value": _stackdump()})
            elif key == "links":
                links = [link_view(link_record(x)) for x in fabric.links()]
                values.append({"appId": app_id, "name": name, "value": links})
            else:
                problems.append(f"{app_id}: no value named {name!r} (known: stackdump, links)")
    return {"success": not problems, "errors": problems, "values": values}


def _stackdump() -> str:
    frames = sys._current_frames()
    return "\n".join(
        f"thread {thread_id}:\n" + "".join(traceback.format_stack(frame)) for thread_id, frame in frames.items()
    )


def operations() -> list[Operation]:
    op = operation_defaults(apis=APIS)
    listed = {"reply": "list", "query": LIST_QUERY}
    return [
        *record_operations(),
        op("listLinks", "GET /links", list_links, "List the live links between routers", tag="Link", **listed),
        op("detailLink", "GET /links/{id}", detail_link, "Retrieve a link", tag="Link"),
        op(
            "patchLink",
            "PATCH /links/{id}",
            patch_link,
            "Mark a link down or change its static cost",
            body=schemas.LINK_PATCH,
            reply="empty",
            tag="Link",
        ),
        op("deleteLink", "DELETE /links/{id}", delete_link, "Forget a link", reply="empty", tag="Link"),
        op(
            "getRouterServicePaths",
            "GET /routers/{id}/paths/{serviceId}",
            router_service_paths,
            "Where a dial of a service entering at this router would go: each terminator's path and chance",
            tag="Router",
        ),
        op("listCircuits", "GET /circuits", list_circuits, "List the live circuits", tag="Circuit", **listed),
        op("detailCircuit", "GET /circuits/{id}", detail_circuit, "Retrieve a circuit and its path", tag="Circuit"),
        op(
            "deleteCircuit",
            "DELETE /circuits/{id}",
            delete_circuit,
            "End a circuit",
            body=schemas.CIRCUIT_DELETE,
            body_optional=True,
            reply="empty",
            tag="Circuit",
        ),
        op(
            "inspect",
            "POST /inspections",
            inspect,
            "Inspect values of the controller",
            body=schemas.INSPECT,
            tag="Inspect",
        ),
        *database_operations(op),
    ]


def record_operations() -> list[Operation]:
    """Routers, services and terminators: the records edge management serves, in their fabric shapes."""
    table = partial(crud, apis=APIS)
    return [
        *table(
            RouterManager,
            schemas=schemas.ROUTER,
            tag="Router",
            view=fabric_router_view,
            handlers={"create": create_router, "update": update_router, "patch": patch_router},
        ),
        *table(
            ServiceManager,
            schemas=schemas.SERVICE,
            tag="Service",
            view=fabric_service_view,
            handlers={"update": update_service},
        ),
        *table(
            TerminatorManager,
            schemas=schemas.TERMINATOR,
            tag="Terminator",
            view=fabric_terminator_view,
            handlers={"create": create_terminator, "update": update_terminator, "patch": patch_terminator},
        ),
        related(
            "listRouterTerminators",
            "/routers/{id}/terminators",
            router_terminators,
            apis=APIS,
            tag="Router",
            summary="List the terminators of a router",
        ),
        related(
            "listServiceTerminators",
            "/services/{id}/terminators",
            service_terminators,
            apis=APIS,
            tag="Service",
            summary="List the terminators of a service",
        ),
    ]


def database_operations(op) -> list[Operation]:
    """The database operations edge management serves too, under ``/fabric/v1/database``."""
    database = partial(op, tag="Database", reply="empty")
    return [
        database(
            "createDatabaseSnapshot",
            "POST /database",
            create_database_snapshot,
            "Write a consistent copy of the database (once a minute at most)",
        ),
        database(
            "checkDataIntegrity",
            "POST /database/check-data-integrity",
            check_data_integrity,
            "Start a background data integrity check",
            status=202,
        ),
        database(
            "fixDataIntegrity",
            "POST /database/fix-data-integrity",
            fix_data_integrity,
            "Snapshot, then check and fix data integrity in the background",
            status=202,
        ),
        database(
            "dataIntegrityResults",
            "GET /database/data-integrity-results",
            data_integrity_results,
            "Return the state of the last integrity run",
            reply="raw",
        ),
    ]
