"""Services on both APIs: management CRUD and listings, the client's view of its services."""

from __future__ import annotations

from functools import partial

from controller import errors
from controller.api.call import Call
from controller.api.crud import LIST_QUERY, crud, related
from controller.api.mappers.config import config_view
from controller.api.mappers.entity import View, listing
from controller.api.mappers.identity import identity_view
from controller.api.mappers.policies import service_edge_router_policy_view, service_policy_view
from controller.api.mappers.router import edge_router_view
from controller.api.mappers.service import service_view
from controller.api.mappers.session import session_edge_routers
from controller.api.mappers.terminator import terminator_view
from controller.api.operations import BOTH, CLIENT, SESSION, Operation
from controller.api.role_queries import (
    ROLE_QUERY,
    attribute_operation,
    id_listing,
    policy_type_query,
    records_of,
    role_candidates,
)
from controller.api.schemas import service, terminator
from controller.model.service import ServiceManager
from controller.model.terminator import TerminatorManager
from controller.policy.kinds import SERVICE_EDGE_ROUTER_POLICIES, SERVICE_POLICIES, SERVICES
from controller.store.query import Listing

TAG = "Service"
CONFIG_TYPES = {"configTypes": {"type": "array", "items": {"type": "string"}}}
MGMT_LIST_QUERY = {**ROLE_QUERY, **CONFIG_TYPES, "asIdentity": {"type": "string"}}
CLIENT_LIST_QUERY = {**ROLE_QUERY, **CONFIG_TYPES}


# -- management ----------------------------------------------------------------------
def list_services(call: Call) -> Listing:
    """All services (or ``asIdentity``'s), with permissions as the caller or ``asIdentity`` sees them."""
    ctl, access = call.ctl, call.ctl.service_access
    candidates = role_candidates(call, SERVICES, ctl.services)
    viewer, session = call.identity, call.session
    as_identity = call.query("asIdentity")
    if as_identity:
        viewer = ctl.identities.find(as_identity) or ctl.identities.find_by_name(as_identity)
        if viewer is None:
            raise errors.NotFound("identity", as_identity)
        session = None
        visible = access.visible_ids(viewer["id"])
        if candidates is None:
            types = access.config_types(call.query_list("configTypes"), call.session)
            return id_listing(
                ctl.services,
                visible,
                call.list_args(),
                lambda r: service_view(ctl, r, viewer["id"], None, types, invalid=True),
            )
        candidates = [r for r in candidates if r["id"] in visible]
    types = access.config_types(call.query_list("configTypes"), call.session)
    return listing(
        ctl.services,
        call.list_args(),
        lambda r: service_view(ctl, r, viewer["id"], session, types, invalid=True),
        candidates=candidates,
    )


def detail_service(call: Call) -> dict:
    ctl = call.ctl
    record = ctl.services.get(call.param())
    types = ctl.service_access.config_types([], call.session)
    return service_view(ctl, record, call.identity["id"], call.session, types, invalid=True)


def service_edge_routers(call: Call) -> Listing:
    ctl = call.ctl
    service = ctl.services.get(call.param())
    ids = ctl.network.engine.edge_routers_for_service(service["id"])
    routers = records_of(ctl.edge_routers, ids)
    return listing(ctl.edge_routers, call.list_args(), partial(edge_router_view, ctl), candidates=routers)


def service_identities(call: Call) -> Listing:
    ctl = call.ctl
    service = ctl.services.get(call.param())
    ids = ctl.network.engine.identities_for_service(service["id"], policy_type_query(call))
    identities = records_of(ctl.identities, ids)
    return listing(ctl.identities, call.list_args(), partial(identity_view, ctl), candidates=identities)


def service_policies_of(manager_attr: str, pkind: str, view: View):
    def handler(call: Call) -> Listing:
        ctl = call.ctl
        service = ctl.services.get(call.param())
        manager = getattr(ctl, manager_attr)
        ids = ctl.network.engine.policies_of(SERVICES, service["id"], pkind)
        return listing(manager, call.list_args(), partial(view, ctl), candidates=records_of(manager, ids))

    return handler


def service_configs(call: Call) -> Listing:
    ctl = call.ctl
    service = ctl.services.get(call.param())
    configs = records_of(ctl.configs, service.get("configs") or [])
    return listing(ctl.configs, call.list_args(), partial(config_view, ctl), candidates=configs)


def service_terminators(call: Call) -> Listing:
    ctl = call.ctl
    service = ctl.services.get(call.param())
    return _terminators(ctl, call, service)


# -- client --------------------------------------------------------------------------
def visible_service(call: Call) -> dict:
    """The service of the path if the caller may dial or bind it; 404 otherwise."""
    ctl, service_id = call.ctl, call.param()
    record = ctl.services.find(service_id)
    if record is None or not ctl.service_access.permissions(call.identity["id"], service_id):
        raise errors.NotFound("service", service_id)
    return record


def client_list_services(call: Call) -> Listing:
    ctl, access, identity_id = call.ctl, call.ctl.service_access, call.identity["id"]
    visible = access.visible_ids(identity_id)
    types = access.config_types(call.query_list("configTypes"), call.session)
    view = lambda r: service_view(ctl, r, identity_id, call.session, types)  # noqa: E731
    candidates = role_candidates(call, SERVICES, ctl.services)
    if candidates is None:
        return id_listing(ctl.services, visible, call.list_args(), view)
    return listing(ctl.services, call.list_args(), view, candidates=[r for r in candidates if r["id"] in visible])


def client_detail_service(call: Call) -> dict:
    ctl = call.ctl
    types = ctl.service_access.config_types([], call.session)
    return service_view(ctl, visible_service(call), call.identity["id"], call.session, types)


def client_service_edge_routers(call: Call) -> dict:
    """``{"edgeRouters": [...]}``: routers shared by the caller's ERPs and the service's SERPs (at most 25)."""
    ctl = call.ctl
    service = visible_service(call)
    token = call.header("session-token")
    if token is not None:
        session = ctl.sessions.find(token.strip())
        if session is None or session["api_session_id"] != call.session["id"]:
            raise errors.Unauthorized()
    return {"edgeRouters": session_edge_routers(ctl, call.identity["id"], service["id"])}


def client_service_terminators(call: Call) -> Listing:
    ctl = call.ctl
    return _terminators(ctl, call, visible_service(call))


def _terminators(ctl, call: Call, service: dict) -> Listing:
    terminators = ctl.terminators.of_service(service["id"])
    return listing(ctl.terminators, call.list_args(), partial(terminator_view, ctl), candidates=terminators)


def operations() -> list[Operation]:
    ops = crud(
        ServiceManager,
        kinds=("list", "create", "detail"),
        schemas=service.BODIES,
        tag=TAG,
        handlers={"list": list_services, "detail": detail_service},
        overrides={"list": {"query": MGMT_LIST_QUERY}},
    )
    ops += crud(ServiceManager, kinds=("update", "patch", "delete"), apis=BOTH, tag=TAG, schemas=service.BODIES)
    ops += crud(TerminatorManager, schemas=terminator.BODIES, tag="Terminator", view=terminator_view)
    ops.append(attribute_operation(SERVICES, "Service"))
    ops += [
        related(
            "listServiceConfig",
            "/services/{id}/configs",
            service_configs,
            tag=TAG,
            summary="List the configs of a service",
        ),
        related(
            "listServiceEdgeRouters",
            "/services/{id}/edge-routers",
            service_edge_routers,
            tag=TAG,
            summary="List the edge routers serving a service (service edge router policies)",
        ),
        related(
            "listServiceIdentities",
            "/services/{id}/identities",
            service_identities,
            tag=TAG,
            summary="List the identities that may dial or bind a service",
            query={**LIST_QUERY, "policyType": {"type": "string", "enum": ["dial", "bind"]}},
        ),
        related(
            "listServiceServiceEdgeRouterPolicies",
            "/services/{id}/service-edge-router-policies",
            service_policies_of(
                "service_edge_router_policies", SERVICE_EDGE_ROUTER_POLICIES, service_edge_router_policy_view
            ),
            tag=TAG,
            summary="List the service edge router policies matching a service",
        ),
        related(
            "listServiceServicePolicies",
            "/services/{id}/service-policies",
            service_policies_of("service_policies", SERVICE_POLICIES, service_policy_view),
            tag=TAG,
            summary="List the service policies matching a service",
        ),
        related(
            "listServiceTerminators",
            "/services/{id}/terminators",
            service_terminators,
            tag=TAG,
            summary="List the terminators of a service",
        ),
        Operation(
            "listServices",
            "GET",
            "/services",
            client_list_services,
            apis=(CLIENT,),
            auth=SESSION,
            reply="list",
            tag=TAG,
            summary="List the services the current identity may dial or bind",
            query=CLIENT_LIST_QUERY,
        ),
        Operation(
            "detailService",
            "GET",
            "/services/{id}",
            client_detail_service,
            apis=(CLIENT,),
            auth=SESSION,
            tag=TAG,
            summary="Retrieve a service the current identity may dial or bind",
        ),
        Operation(
            "listServiceEdgeRouters",
            "GET",
            "/services/{id}/edge-routers",
            client_service_edge_routers,
            apis=(CLIENT,),
            auth=SESSION,
            tag=TAG,
            query=LIST_QUERY,
            summary="List the edge routers the current identity may use for a service",
        ),
        Operation(
            "listServiceTerminators",
            "GET",
            "/services/{id}/terminators",
            client_service_terminators,
            apis=(CLIENT,),
            auth=SESSION,
            reply="list",
            tag=TAG,
            query=LIST_QUERY,
            summary="List the terminators of a service the current identity may use",
        ),
    ]
    return ops
