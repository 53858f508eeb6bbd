"""Management operations on identities, identity types, authenticators,
authentication policies, API sessions and enrollments."""

from __future__ import annotations

from dataclasses import replace

from controller.api.call import Call, Created
from controller.api.crud import crud, related
from controller.api.operations import MANAGEMENT, Operation
from controller.api.role_queries import ROLE_QUERY, role_filtered_listing
from controller.model import enrollment, identity
from controller.model.api_session import ApiSessionManager
from controller.model.auth_policy import AuthPolicyManager
from controller.model.authenticator import AuthenticatorManager
from controller.model.enrollment import EnrollmentManager
from controller.model.identity import IdentityManager
from controller.model.identity_type import IdentityTypeManager
from controller.policy.kinds import IDENTITIES
from controller.store.query import Listing


def list_identities(call: Call) -> Listing:
    """``roleFilter``/``roleSemantic`` are answered by the policy engine's attribute index."""
    return role_filtered_listing(IDENTITIES, "identities")(call)


def identity_authenticators(call: Call) -> Listing:
    ctl = call.ctl
    ctl.identities.get(call.param())
    return ctl.authenticators.listing(call.list_args(), candidates=ctl.authenticators.of_identity(call.param()))


def identity_enrollments(call: Call) -> Listing:
    ctl = call.ctl
    ctl.identities.get(call.param())
    records = [ctl.enrollments.find(e) for e in ctl.enrollments.by_identity.get(call.param())]
    return ctl.enrollments.listing(call.list_args(), candidates=records)


def disable_identity(call: Call) -> None:
    call.ctl.identities.get(call.param())
    call.ctl.identities.disable(call.param(), call.body["durationMinutes"])


def enable_identity(call: Call) -> None:
    call.ctl.identities.enable(call.param())


def refresh_enrollment(call: Call) -> Created:
    call.ctl.enrollments.refresh(call.param(), call.body["expiresAt"])
    return Created("enrollments", call.param(), status=200)


def operations() -> list[Operation]:
    ops = []
    ops += crud(IdentityManager, "identities", "Identity", "Identities", handlers={"list": list_identities})
    ops[0] = replace(ops[0], query=ROLE_QUERY)
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
    ops += crud(IdentityTypeManager, "identity_types", "IdentityType", "IdentityTypes", kinds=("list", "detail"))
    ops += crud(AuthenticatorManager, "authenticators", "Authenticator", "Authenticators")
    ops += crud(AuthPolicyManager, "auth_policies", "AuthPolicy", "AuthPolicies")
    ops += crud(
        ApiSessionManager,
        "api_sessions",
        "APISessions",
        "APISessions",
        kinds=("list", "detail", "delete"),
        tag="API Session",
    )
    ops += crud(
        EnrollmentManager, "enrollments", "Enrollment", "Enrollments", kinds=("list", "create", "detail", "delete")
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
