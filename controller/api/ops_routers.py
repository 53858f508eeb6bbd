"""Routers, edge routers and transit routers, and the listings around edge routers."""

from __future__ import annotations

from functools import partial

from controller.api.call import Call
from controller.api.crud import crud, related
from controller.api.mappers.entity import View, listing
from controller.api.mappers.identity import identity_view
from controller.api.mappers.policies import edge_router_policy_view, service_edge_router_policy_view
from controller.api.mappers.router import edge_router_client_view, edge_router_view, router_view, transit_router_view
from controller.api.mappers.service import plain_service_view
from controller.api.operations import CLIENT, MANAGEMENT, SESSION, Operation
from controller.api.role_queries import ROLE_QUERY, attribute_operation, records_of, role_filtered_listing
from controller.api.schemas import router
from controller.model.router import EdgeRouterManager, RouterManager, TransitRouterManager
from controller.policy.kinds import EDGE_ROUTER_POLICIES, EDGE_ROUTERS, SERVICE_EDGE_ROUTER_POLICIES
from controller.store.query import Listing

TAG = "Edge Router"


def router_policies_of(manager_attr: str, pkind: str, view: View):
    def handler(call: Call) -> Listing:
        ctl = call.ctl
        router = ctl.edge_routers.get(call.param())
        manager = getattr(ctl, manager_attr)
        ids = ctl.network.engine.policies_of(EDGE_ROUTERS, router["id"], pkind)
        return listing(manager, call.list_args(), partial(view, ctl), candidates=records_of(manager, ids))

    return handler


def router_identities(call: Call) -> Listing:
    ctl = call.ctl
    router = ctl.edge_routers.get(call.param())
    ids = ctl.network.engine.identities_for_edge_router(router["id"])
    identities = records_of(ctl.identities, ids)
    return listing(ctl.identities, call.list_args(), partial(identity_view, ctl), candidates=identities)


def router_services(call: Call) -> Listing:
    ctl = call.ctl
    router = ctl.edge_routers.get(call.param())
    ids = ctl.network.engine.services_for_edge_router(router["id"])
    services = records_of(ctl.services, ids)
    return listing(ctl.services, call.list_args(), partial(plain_service_view, ctl), candidates=services)


def re_enroll(call: Call) -> None:
    call.ctl.edge_routers.re_enroll(call.param(), context=call.change)


def current_identity_edge_routers(call: Call) -> Listing:
    """Verified edge routers the caller reaches by edge router policies (admins: every verified one)."""
    ctl, identity = call.ctl, call.identity
    if identity.get("is_admin"):
        ids = ctl.edge_routers.of_kind.get(True)
    else:
        ids = ctl.network.engine.edge_routers_for_identity(identity["id"])
    records = [r for r in records_of(ctl.edge_routers, ids) if r.get("is_verified")]
    return listing(ctl.edge_routers, call.list_args(), partial(edge_router_client_view, ctl), candidates=records)


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
        related(
            "listEdgeRouterEdgeRouterPolicies",
            "/edge-routers/{id}/edge-router-policies",
            router_policies_of("edge_router_policies", EDGE_ROUTER_POLICIES, edge_router_policy_view),
            tag=TAG,
            summary="List the edge router policies matching an edge router",
        ),
        related(
            "listEdgeRouterIdentities",
            "/edge-routers/{id}/identities",
            router_identities,
            tag=TAG,
            summary="List the identities that may use an edge router",
        ),
        related(
            "listEdgeRouterServiceEdgeRouterPolicies",
            "/edge-routers/{id}/service-edge-router-policies",
            router_policies_of(
                "service_edge_router_policies", SERVICE_EDGE_ROUTER_POLICIES, service_edge_router_policy_view
            ),
            tag=TAG,
            summary="List the service edge router policies matching an edge router",
        ),
        related(
            "listEdgeRouterServices",
            "/edge-routers/{id}/services",
            router_services,
            tag=TAG,
            summary="List the services an edge router serves",
        ),
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
