"""Sessions on both APIs and the client's service-update marker."""

from __future__ import annotations

from functools import partial

from controller.api.call import Call
from controller.api.crud import LIST_QUERY, crud
from controller.api.mappers.entity import listing
from controller.api.operations import CLIENT, MANAGEMENT, SESSION, Operation
from controller.api.schemas.session import CREATE
from controller.model.session import SessionManager
from controller.store.query import Listing

TAG = "Session"


def client_list_sessions(call: Call, *, session_view, sessions) -> Listing:
    return listing(sessions, call.list_args(), session_view, candidates=sessions.visible_to(call.identity))


def create_session(call: Call, *, session_view, sessions) -> dict:
    return session_view(sessions.create_for(call.identity, call.session, call.body, context=call.change))


def client_detail_session(call: Call, *, session_view, sessions) -> dict:
    return session_view(sessions.get_own(call.identity, call.param()))


def client_delete_session(call: Call, *, sessions) -> None:
    sessions.delete(sessions.get_own(call.identity, call.param())["id"], context=call.change)


def list_sessions(call: Call, *, session_view, sessions) -> Listing:
    return listing(sessions, call.list_args(), partial(session_view, management=True))


def detail_session(call: Call, *, session_view, sessions) -> dict:
    return session_view(sessions.get(call.param()), management=True)


def session_route_path(call: Call, *, sessions) -> dict:
    sessions.get(call.param())
    return {"routePath": []}


def service_updates(call: Call, *, service_updates) -> dict:
    return {"lastChangeAt": service_updates.last_change(call.identity["id"])}


def operations() -> list[Operation]:
    ops = crud(
        SessionManager,
        kinds=("list", "detail", "delete"),
        tag=TAG,
        handlers={"list": list_sessions, "detail": detail_session},
    )
    ops += [
        Operation(
            "detailSessionRoutePath",
            "GET",
            "/sessions/{id}/route-path",
            session_route_path,
            apis=(MANAGEMENT,),
            tag=TAG,
            summary="The route path of a session's circuit (none: this controller routes nothing)",
        ),
        Operation(
            "listSessions",
            "GET",
            "/sessions",
            client_list_sessions,
            apis=(CLIENT,),
            auth=SESSION,
            reply="list",
            tag=TAG,
            query=LIST_QUERY,
            summary="List the current identity's sessions",
        ),
        Operation(
            "createSession",
            "POST",
            "/sessions",
            create_session,
            apis=(CLIENT,),
            auth=SESSION,
            body=CREATE,
            status=201,
            tag=TAG,
            summary="Create (or reuse) a Dial or Bind session for a service",
        ),
        Operation(
            "detailSession",
            "GET",
            "/sessions/{id}",
            client_detail_session,
            apis=(CLIENT,),
            auth=SESSION,
            tag=TAG,
            summary="Retrieve one of the current identity's sessions",
        ),
        Operation(
            "deleteSession",
            "DELETE",
            "/sessions/{id}",
            client_delete_session,
            apis=(CLIENT,),
            auth=SESSION,
            reply="empty",
            tag=TAG,
            summary="Delete one of the current identity's sessions",
        ),
        Operation(
            "listServiceUpdates",
            "GET",
            "/current-api-session/service-updates",
            service_updates,
            apis=(CLIENT,),
            auth=SESSION,
            tag="Current API Session",
            summary="When the current identity's services last changed",
        ),
    ]
    return ops
