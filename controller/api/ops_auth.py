"""Authentication, the current API session and the current identity (both APIs)."""

from __future__ import annotations

from datetime import datetime

from controller import errors
from controller.api.auth_wire import legacy_queries
from controller.api.call import Call
from controller.api.challenges import www_authenticate
from controller.api.crud import LIST_QUERY
from controller.api.mappers.entity import listing
from controller.api.operations import BOTH, PARTIAL, PUBLIC, SESSION, Operation, operation_defaults
from controller.api.schemas import authenticator as auth_schemas
from controller.api.schemas.authenticate import AUTHENTICATE
from controller.auth.primary import METHOD_NAMES
from controller.errors import Challenge
from controller.store.query import Listing

METHOD_QUERY = {"method": {"type": "string", "enum": list(METHOD_NAMES)}}


def authenticate(call: Call, *, api_session_view, auth) -> dict:
    method = call.query("method")
    if method not in METHOD_NAMES:
        raise errors.FieldError("method", f"method in query should be one of [{' '.join(METHOD_NAMES)}]", method)
    result = auth.authenticate(call.auth_request(method))
    view = api_session_view(result.api_session, current=True, auth_queries=legacy_queries(result.pending))
    call.set_header("zt-session", result.api_session["token"])
    call.set_header("expiration-seconds", str(view["expirationSeconds"]))
    call.set_header("expires-at", go_time(result.expires_at))
    if result.extend_requested:
        call.set_header("ziti-authenticator-extend-requested", "true")
    _challenge(call, result.challenge)
    return view


def go_time(dt: datetime) -> str:
    """Go's ``time.String()`` form used in the ``expires-at`` header."""
    millis = f"{dt.microsecond // 1000:03d}".rstrip("0")
    fraction = f".{millis}" if millis else ""
    return dt.strftime("%Y-%m-%d %H:%M:%S") + fraction + " +0000 UTC"


def _challenge(call: Call, challenge: Challenge | None) -> None:
    """Name a missing secondary ext-jwt signer, on the operations the real controller does."""
    if challenge is not None:
        call.set_header("WWW-Authenticate", www_authenticate((challenge,)))


def current_api_session(call: Call, *, oidc_session_view, api_session_view) -> dict:
    resolved = call.resolved
    _challenge(call, resolved.pending.challenge)
    if resolved.is_oidc:
        return oidc_session_view(resolved)
    queries = legacy_queries(resolved.pending)
    return api_session_view(call.session, current=True, auth_queries=queries)


def delete_current_api_session(call: Call, *, oidc, api_sessions, events) -> None:
    _challenge(call, call.resolved.pending.challenge)
    if call.resolved.is_oidc:
        oidc.sessions.end(call.resolved, context=call.change)
    else:
        api_sessions.close(call.session["id"], context=call.change)
    events.logout(call.session, call.client_ip)


def current_identity(call: Call, *, identity_view) -> dict:
    return identity_view(call.identity)


def own_authenticators(call: Call, *, authenticator_view, authenticators) -> Listing:
    mgr = authenticators
    render = authenticator_view
    return listing(mgr, call.list_args(), render, candidates=mgr.of_identity(call.identity["id"]))


def own_authenticator(call: Call, *, authenticator_view, authenticators) -> dict:
    mgr = authenticators
    return authenticator_view(mgr.get_own(call.identity["id"], call.param()))


def update_own_authenticator(call: Call, *, authenticators) -> None:
    authenticators.update_own(call.identity["id"], call.param(), call.body, partial=False, context=call.change)


def patch_own_authenticator(call: Call, *, authenticators) -> None:
    authenticators.update_own(call.identity["id"], call.param(), call.body, partial=True, context=call.change)


def operations() -> list[Operation]:
    session = operation_defaults(apis=BOTH, auth=PARTIAL, tag="Current API Session")
    own = operation_defaults(apis=BOTH, auth=SESSION, tag="Current Identity")
    return [
        session(
            "authenticate",
            "POST /authenticate",
            authenticate,
            "Authenticate and open an API session",
            auth=PUBLIC,
            body=AUTHENTICATE,
            body_optional=True,
            tag="Authentication",
            query=METHOD_QUERY,
        ),
        session(
            "getCurrentAPISession", "GET /current-api-session", current_api_session, "Return the current API session"
        ),
        session(
            "deleteCurrentApiSession",
            "DELETE /current-api-session",
            delete_current_api_session,
            "Log out: delete the current API session",
            reply="empty",
        ),
        own(
            "getCurrentIdentity",
            "GET /current-identity",
            current_identity,
            "Return the identity of the current API session",
        ),
        own(
            "listCurrentIdentityAuthenticators",
            "GET /current-identity/authenticators",
            own_authenticators,
            "List the authenticators of the current identity",
            reply="list",
            query=LIST_QUERY,
        ),
        own(
            "detailCurrentIdentityAuthenticator",
            "GET /current-identity/authenticators/{id}",
            own_authenticator,
            "Retrieve one of the current identity's authenticators",
        ),
        own(
            "updateCurrentIdentityAuthenticator",
            "PUT /current-identity/authenticators/{id}",
            update_own_authenticator,
            "Replace the username and password of one's own authenticator",
            body=auth_schemas.UPDATE_OWN,
            reply="empty",
        ),
        own(
            "patchCurrentIdentityAuthenticator",
            "PATCH /current-identity/authenticators/{id}",
            patch_own_authenticator,
            "Update the username or password of one's own authenticator",
            body=auth_schemas.PATCH_OWN,
            reply="empty",
        ),
    ]
