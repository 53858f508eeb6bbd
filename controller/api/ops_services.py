"""Services on both APIs: management CRUD and listings, the client's view of its services."""

from __future__ import annotations

from controller import errors
from controller.api.call import Call
from controller.api.crud import LIST_QUERY, crud, related
from controller.api.mappers.entity import listing
from controller.api.mappers.terminator import terminator_view
from controller.api.operations import BOTH, CLIENT, SESSION, Operation
from controller.api.relations import relation
from controller.api.role_queries import ROLE_QUERY, attribute_operation, id_listing, records_of, role_candidates
from controller.api.schemas import service, terminator
from controller.model.service import ServiceManager
from controller.model.terminator import TerminatorManager
from controller.policy.kinds import SERVICES
from controller.store.query import Listing

TAG = "Service"
CONFIG_TYPES = {"configTypes": {"type": "array", "items": {"type": "string"}}}
MGMT_LIST_QUERY = {**ROLE_QUERY, **CONFIG_TYPES, "asIdentity": {"type": "string"}}
CLIENT_LIST_QUERY = {**ROLE_QUERY, **CONFIG_TYPES}


# -- management ----------------------------------------------------------------------
def list_services(call: Call, *, service_view, service_access, services, identities, engine) -> Listing:
    """All services (or ``asIdentity``'s), with permissions as the caller or ``asIdentity`` sees them."""
    access = service_access
    candidates = role_candidates(call, SERVICES, services, engine)
    viewer, session = call.identity, call.session
    as_identity = call.query("asIdentity")
    if as_identity:
        viewer = identities.find(as_identity) or identities.find_by_name(as_identity)
        if viewer is None:
            raise errors.NotFound("identity", as_identity)
        session = None
        visible = access.visible_ids(viewer["id"])
        if candidates is None:
            types = access.config_types(call.query_list("configTypes"), call.session)
            return id_listing(
                services,
                visible,
                call.list_args(),
                lambda r: service_view(r, access.sight(r, viewer["id"], None, types), invalid=True),
            )
        candidates = [r for r in candidates if r["id"] in visible]
    types = access.config_types(call.query_list("configTypes"), call.session)
    return listing(
        services,
        call.list_args(),
        lambda r: service_view(r, access.sight(r, viewer["id"], session, types), invalid=True),
        candidates=candidates,
    )


def detail_service(call: Call, *, service_view, services, service_access) -> dict:
    record = services.get(call.param())
    types = service_access.config_types([], call.session)
    return service_view(record, service_access.sight(record, call.identity["id"], call.session, types), invalid=True)


def service_configs(call: Call, *, config_view, services, configs) -> Listing:
    service = services.get(call.param())
    records = records_of(configs, service.get("configs") or [])
    return listing(configs, call.list_args(), config_view, candidates=records)


def service_terminators(call: Call, *, services, terminators, terminator_view) -> Listing:
    service = services.get(call.param())
    return _terminators(call, service, terminators, terminator_view)


# -- client --------------------------------------------------------------------------
def visible_service(call: Call, services, service_access) -> dict:
    """The service of the path if the caller may dial or bind it; 404 otherwise."""
    service_id = call.param()
    record = services.find(service_id)
    if record is None or not service_access.permissions(call.identity["id"], service_id):
        raise errors.NotFound("service", service_id)
    return record


def client_list_services(call: Call, *, service_view, service_access, services, engine) -> Listing:
    access, identity_id = service_access, call.identity["id"]
    visible = access.visible_ids(identity_id)
    types = access.config_types(call.query_list("configTypes"), call.session)
    view = lambda r: service_view(r, access.sight(r, identity_id, call.session, types))  # noqa: E731
    candidates = role_candidates(call, SERVICES, services, engine)
    if candidates is None:
        return id_listing(services, visible, call.list_args(), view)
    return listing(services, call.list_args(), view, candidates=[r for r in candidates if r["id"] in visible])


def client_detail_service(call: Call, *, service_view, service_access, services) -> dict:
    types = service_access.config_types([], call.session)
    record = visible_service(call, services, service_access)
    return service_view(record, service_access.sight(record, call.identity["id"], call.session, types))


def client_service_edge_routers(call: Call, *, session_edge_routers, sessions, services, service_access) -> dict:
    """``{"edgeRouters": [...]}``: routers shared by the caller's ERPs and the service's SERPs (at most 25)."""
    service = visible_service(call, services, service_access)
    token = call.header("session-token")
    if token is not None:
        session = sessions.find(token.strip())
        if session is None or session["api_session_id"] != call.session["id"]:
            raise errors.Unauthorized()
    return {"edgeRouters": session_edge_routers(call.identity["id"], service["id"])}


def client_service_terminators(call: Call, *, services, service_access, terminators, terminator_view) -> Listing:
    return _terminators(call, visible_service(call, services, service_access), terminators, terminator_view)


def _terminators(call: Call, service: dict, terminators, terminator_view) -> Listing:
    records = terminators.of_service(service["id"])
    return listing(terminators, call.list_args(), terminator_view, candidates=records)


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
        relation("listServiceEdgeRouters", tag=TAG),
        relation("listServiceIdentities", tag=TAG),
        relation("listServiceServiceEdgeRouterPolicies", tag=TAG),
        relation("listServiceServicePolicies", tag=TAG),
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
