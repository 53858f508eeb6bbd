"""Routers, edge routers and transit routers, and the listings around edge routers."""

from __future__ import annotations

from controller.api.call import Call
from controller.api.crud import crud
from controller.api.mappers.entity import listing
from controller.api.mappers.router import edge_router_view, router_view, transit_router_view
from controller.api.operations import CLIENT, MANAGEMENT, SESSION, Operation
from controller.api.relations import relation
from controller.api.role_queries import ROLE_QUERY, attribute_operation, records_of, role_filtered_listing
from controller.api.schemas import router
from controller.model.router import EdgeRouterManager, RouterManager, TransitRouterManager
from controller.policy.kinds import EDGE_ROUTERS
from controller.store.query import Listing

TAG = "Edge Router"


def re_enroll(call: Call, *, edge_routers) -> None:
    edge_routers.re_enroll(call.param(), context=call.change)


def current_identity_edge_routers(call: Call, *, edge_router_client_view, edge_routers, engine) -> Listing:
    """Verified edge routers the caller reaches by edge router policies (admins: every verified one)."""
    identity = call.identity
    if identity.get("is_admin"):
        ids = edge_routers.of_kind.get(True)
    else:
        ids = engine.edge_routers_for_identity(identity["id"])
    records = [r for r in records_of(edge_routers, ids) if r.get("is_verified")]
    return listing(edge_routers, call.list_args(), edge_router_client_view, candidates=records)


def operations() -> list[Operation]:
    ops = crud(RouterManager, schemas=router.ROUTER, tag="Router", view=router_view)
    ops += crud(TransitRouterManager, schemas=router.ROUTER, tag="Router", view=transit_router_view)
    ops += crud(
        EdgeRouterManager,
        schemas=router.EDGE_ROUTER,
        tag=TAG,
        handlers={"list": role_filtered_listing(EDGE_ROUTERS, edge_router_view)},
        overrides={"list": {"query": ROLE_QUERY}},
        view=edge_router_view,
    )
    ops += [
        relation("listEdgeRouterEdgeRouterPolicies", tag=TAG),
        relation("listEdgeRouterIdentities", tag=TAG),
        relation("listEdgeRouterServiceEdgeRouterPolicies", tag=TAG),
        relation("listEdgeRouterServices", tag=TAG),
        Operation(
            "reEnrollEdgeRouter",
            "POST",
            "/edge-routers/{id}/re-enroll",
            re_enroll,
            apis=(MANAGEMENT,),
            reply="empty",
            tag=TAG,
            summary="Replace an edge router's enrollment; it must enroll again",
        ),
        attribute_operation(EDGE_ROUTERS, "Edge Router"),
        Operation(
            "getCurrentIdentityEdgeRouters",
            "GET",
            "/current-identity/edge-routers",
            current_identity_edge_routers,
            apis=(CLIENT,),
            auth=SESSION,
            reply="list",
            tag="Current Identity",
            query={"limit": {"type": "integer"}, "offset": {"type": "integer"}, "filter": {"type": "string"}},
            summary="List the edge routers the current identity may use",
        ),
    ]
    return ops
