"""Management operations on identities, identity types, authenticators,
authentication policies, API sessions and enrollments."""

from __future__ import annotations

from controller.api.call import Call, Created
from controller.api.crud import crud, related
from controller.api.mappers.api_session import api_session_view
from controller.api.mappers.auth_policy import auth_policy_view
from controller.api.mappers.authenticator import authenticator_view
from controller.api.mappers.enrollment import enrollment_view
from controller.api.mappers.entity import listing
from controller.api.mappers.identity import identity_type_view, identity_view
from controller.api.operations import MANAGEMENT, Operation
from controller.api.role_queries import ROLE_QUERY, role_filtered_listing
from controller.api.schemas import auth_policy, authenticator, enrollment, identity
from controller.model.api_session import ApiSessionManager
from controller.model.auth_policy import AuthPolicyManager
from controller.model.authenticator import AuthenticatorManager
from controller.model.enrollment import EnrollmentManager
from controller.model.identity import IdentityManager
from controller.model.identity_type import IdentityTypeManager
from controller.policy.kinds import IDENTITIES
from controller.store.query import Listing


def identity_authenticators(call: Call, *, authenticator_view, identities, authenticators) -> Listing:
    identities.get(call.param())
    records = authenticators.of_identity(call.param())
    return listing(authenticators, call.list_args(), authenticator_view, candidates=records)


def identity_enrollments(call: Call, *, enrollment_view, identities, enrollments) -> Listing:
    identities.get(call.param())
    records = [enrollments.find(e) for e in enrollments.by_identity.get(call.param())]
    return listing(enrollments, call.list_args(), enrollment_view, candidates=records)


def list_api_sessions(call: Call, *, api_session_view, api_sessions) -> Listing:
    """Sessions idle past the timeout are swept first, so none is listed."""
    api_sessions.sweep()
    return listing(api_sessions, call.list_args(), api_session_view)


def disable_identity(call: Call, *, identities) -> None:
    identities.get(call.param())
    identities.disable(call.param(), call.body["durationMinutes"], context=call.change)


def enable_identity(call: Call, *, identities) -> None:
    identities.enable(call.param(), context=call.change)


def refresh_enrollment(call: Call, *, enrollments) -> Created:
    enrollments.refresh(call.param(), call.body["expiresAt"], context=call.change)
    return Created("enrollments", call.param(), status=200)


def operations() -> list[Operation]:
    ops = []
    ops += crud(
        IdentityManager,
        schemas=identity.BODIES,
        handlers={"list": role_filtered_listing(IDENTITIES, identity_view)},
        overrides={"list": {"query": ROLE_QUERY}},
        view=identity_view,
    )
    ops += [
        related(
            "getIdentityAuthenticators",
            "/identities/{id}/authenticators",
            identity_authenticators,
            tag="Identity",
            summary="List the authenticators of an identity",
        ),
        related(
            "getIdentityEnrollments",
            "/identities/{id}/enrollments",
            identity_enrollments,
            tag="Identity",
            summary="List the enrollments of an identity",
        ),
        Operation(
            "disableIdentity",
            "POST",
            "/identities/{id}/disable",
            disable_identity,
            apis=(MANAGEMENT,),
            body=identity.DISABLE,
            reply="empty",
            tag="Identity",
            summary="Disable an identity for a duration",
        ),
        Operation(
            "enableIdentity",
            "POST",
            "/identities/{id}/enable",
            enable_identity,
            apis=(MANAGEMENT,),
            reply="empty",
            tag="Identity",
            summary="Clear the disabled state of an identity",
        ),
    ]
    ops += crud(IdentityTypeManager, kinds=("list", "detail"), view=identity_type_view)
    ops += crud(AuthenticatorManager, schemas=authenticator.BODIES, view=authenticator_view)
    ops += crud(AuthPolicyManager, schemas=auth_policy.BODIES, view=auth_policy_view)
    ops += crud(
        ApiSessionManager,
        kinds=("list", "detail", "delete"),
        tag="API Session",
        handlers={"list": list_api_sessions},
        view=api_session_view,
    )
    ops += crud(
        EnrollmentManager, kinds=("list", "create", "detail", "delete"), view=enrollment_view, schemas=enrollment.BODIES
    )
    ops.append(
        Operation(
            "refreshEnrollment",
            "POST",
            "/enrollments/{id}/refresh",
            refresh_enrollment,
            apis=(MANAGEMENT,),
            body=enrollment.REFRESH,
            reply="create",
            tag="Enrollment",
            summary="Give an enrollment a new expiry, token and JWT",
        )
    )
    return ops
