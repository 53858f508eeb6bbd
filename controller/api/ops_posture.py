"""Posture checks and their types (management), posture responses (client), posture data and failures."""

from __future__ import annotations

from controller.api.call import Call
from controller.api.crud import crud
from controller.api.mappers.posture_check import posture_check_type_view, posture_check_view
from controller.api.operations import CLIENT, MANAGEMENT, SESSION, Operation
from controller.api.role_queries import ROLE_QUERY, attribute_operation, role_filtered_listing
from controller.api.schemas import posture_check
from controller.api.schemas.posture_data import BULK, RESPONSE
from controller.model.posture_check import PostureCheckManager, PostureCheckTypeManager
from controller.model.posture_data import check_required
from controller.policy.kinds import POSTURE_CHECKS
from controller.store.query import Listing

TAG = "Posture Checks"


def submit(call: Call, responses: list[dict], posture, sessions) -> dict:
    identity_id = call.identity["id"]
    services: dict[str, dict] = {}
    for response in responses:  # all or nothing: a bad response later in a bulk records none
        check_required(response)
    for response in responses:
        for service in posture.submit(identity_id, call.session, response):
            services.setdefault(service["id"], service)
    sessions.enforce_posture(identity_id, context=call.change)
    return {"services": list(services.values())}


def posture_response(call: Call, *, posture, sessions) -> dict:
    return submit(call, [call.body], posture, sessions)


def posture_response_bulk(call: Call, *, posture, sessions) -> dict:
    return submit(call, call.body, posture, sessions)


def identity_posture_data(call: Call, *, posture_data_view, identities) -> dict:
    identity = identities.get(call.param())
    return posture_data_view(identity["id"])


def identity_failed_requests(call: Call, *, identities, posture) -> Listing:
    identity = identities.get(call.param())
    entries = posture.failed_requests(identity["id"])
    return Listing(entries, {"limit": len(entries), "offset": 0, "totalCount": len(entries)})


def operations() -> list[Operation]:
    ops = crud(
        PostureCheckManager,
        schemas=posture_check.BODIES,
        tag=TAG,
        handlers={"list": role_filtered_listing(POSTURE_CHECKS, posture_check_view)},
        overrides={"list": {"query": ROLE_QUERY}},
        view=posture_check_view,
    )
    ops += crud(PostureCheckTypeManager, kinds=("list", "detail"), tag=TAG, view=posture_check_type_view)
    ops += [
        attribute_operation(POSTURE_CHECKS, "Posture Check"),
        Operation(
            "createPostureResponse",
            "POST",
            "/posture-response",
            posture_response,
            apis=(CLIENT,),
            auth=SESSION,
            body=RESPONSE,
            status=201,
            tag="Posture",
            summary="Submit one posture response",
        ),
        Operation(
            "createPostureResponseBulk",
            "POST",
            "/posture-response-bulk",
            posture_response_bulk,
            apis=(CLIENT,),
            auth=SESSION,
            body=BULK,
            tag="Posture",
            summary="Submit several posture responses",
        ),
        Operation(
            "getIdentityPostureData",
            "GET",
            "/identities/{id}/posture-data",
            identity_posture_data,
            apis=(MANAGEMENT,),
            tag="Identity",
            summary="The posture data an identity reported",
        ),
        Operation(
            "getIdentityFailedServiceRequests",
            "GET",
            "/identities/{id}/failed-service-requests",
            identity_failed_requests,
            apis=(MANAGEMENT,),
            reply="list",
            tag="Identity",
            summary="The latest session requests refused for posture",
        ),
    ]
    return ops
