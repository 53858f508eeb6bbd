"""Domain errors. They know nothing about HTTP: ``api/status.py`` maps them.

Each error carries a stable UPPER_SNAKE ``code`` (the real controller's), a human
message and an optional ``cause`` that is always an object on the wire.
"""
from __future__ import annotations

from typing import Any

MESSAGES = {
    "UNAUTHORIZED": "The request could not be completed. The session is not authorized or the credentials are invalid",
    "INVALID_AUTH": "The authentication request failed",
    "NOT_FOUND": "The resource requested was not found or is no longer available",
    "COULD_NOT_VALIDATE": "The supplied request contains an invalid document or no valid accept content were available, see cause",
    "COULD_NOT_PARSE_BODY": "The body of the request could not be parsed",
    "INVALID_FILTER": "The filter query supplied is invalid",
    "INVALID_PAGINATION": "The pagination properties provided are invalid",
    "INVALID_SORT_IDENTIFIER": "The sort order supplied is invalid",
    "UNHANDLED": "An unhandled error occurred",
    "MFA_INVALID_TOKEN": "An invalid token/code was provided",
    "CAN_NOT_DELETE_REFERENCED_ENTITY": "The entity requested for delete can not be deleted because it is referenced by other entities",
    "ENTITY_CAN_NOT_BE_DELETED": "The entity requested for delete can not be deleted",
    "ENTITY_CAN_NOT_BE_UPDATED": "The entity requested for update can not be updated",
    "METHOD_NOT_ALLOWED": "The resource requested does not support this HTTP verb",
    "RATE_LIMITED": "The resource is rate limited and the rate limit has been exceeded. Please try again later",
    "REQUEST_ENTITY_TOO_LARGE": "The request body is too large",
    "UNSUPPORTED_MEDIA": "The content type of the request is not supported",
    "INVALID_AUTH_METHOD": "The authentication method is not supported",
    "STORE_UNAVAILABLE": "The data store cannot accept writes at this time",
    "INVALID_POSTURE": "The supplied posture did not meet the criteria required for this operation",
    "NO_EDGE_ROUTERS_AVAILABLE": "No edge routers are assigned and online to handle the requested connection",
}


def message_for(code: str, default: str | None = None) -> str:
    return MESSAGES.get(code, default or code.replace("_", " ").capitalize())


class ControllerError(Exception):
    """Base of every error that reaches a client as an error envelope."""

    code = "UNHANDLED"

    def __init__(self, code: str | None = None, message: str | None = None, cause: dict[str, Any] | None = None):
        self.code = code or type(self).code
        self.message = message or message_for(self.code)
        self.cause = cause
        super().__init__(f"{self.code}: {self.message}")


class BadRequest(ControllerError):
    """A request that cannot be served as sent (400)."""

    code = "COULD_NOT_VALIDATE"


class FieldError(BadRequest):
    """A field of the request is invalid: 400 ``COULD_NOT_VALIDATE`` with a field cause."""

    def __init__(self, field: str, reason: str, value: Any = None, code: str | None = None, message: str | None = None):
        self.field, self.reason, self.value = field, reason, value
        cause = {"field": field, "reason": reason, "value": _stringify(value)}
        super().__init__(code or "COULD_NOT_VALIDATE", message, cause)


class InvalidFilter(BadRequest):
    """A bad ``filter`` query (400 ``INVALID_FILTER``)."""

    code = "INVALID_FILTER"

    def __init__(self, detail: str, code: str = "INVALID_FILTER"):
        self.detail = detail
        super().__init__(code, None, {"code": "UNHANDLED", "message": detail})


class NotFound(ControllerError):
    code = "NOT_FOUND"

    def __init__(self, kind: str | None = None, entity_id: str | None = None, code: str | None = None, message: str | None = None):
        cause = None
        if kind is not None:
            cause = {"code": "UNHANDLED", "message": f"{kind} with id {entity_id} not found"}
        super().__init__(code or "NOT_FOUND", message, cause)


class Conflict(ControllerError):
    """A state conflict (409)."""

    code = "CONFLICT"


class ReferenceExists(Conflict):
    """Deleting something still referenced (409 ``CAN_NOT_DELETE_REFERENCED_ENTITY``)."""

    code = "CAN_NOT_DELETE_REFERENCED_ENTITY"

    def __init__(self, field: str, ids: list[str], message: str | None = None):
        super().__init__(self.code, message, {"field": field, "reason": "referenced", "value": ",".join(ids)})


class Unauthorized(ControllerError):
    """No valid session, or not allowed to do this (401 ``UNAUTHORIZED``)."""

    code = "UNAUTHORIZED"

    def __init__(self, code: str | None = None, message: str | None = None, cause=None, www_authenticate: str | None = None):
        self.www_authenticate = www_authenticate
        super().__init__(code, message, cause)


class InvalidAuth(Unauthorized):
    """Failed authentication, identical for every reason (401 ``INVALID_AUTH``)."""

    code = "INVALID_AUTH"


class Forbidden(ControllerError):
    code = "FORBIDDEN"


class Expired(BadRequest):
    code = "ENROLLMENT_EXPIRED"


class RateLimited(ControllerError):
    code = "RATE_LIMITED"


class Unavailable(ControllerError):
    """The store cannot write (503); nothing already stored is lost."""

    code = "STORE_UNAVAILABLE"


class UnsupportedMedia(ControllerError):
    code = "UNSUPPORTED_MEDIA"


class TooLarge(ControllerError):
    code = "REQUEST_ENTITY_TOO_LARGE"


class NotImplementedYet(ControllerError):
    """An operation of the spec this build does not serve yet (501)."""

    code = "NOT_IMPLEMENTED"


def _stringify(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    try:
        import json

        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    except (TypeError, ValueError):
        return str(value)
