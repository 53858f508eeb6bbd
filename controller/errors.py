"""Domain errors and the one error catalogue. They know nothing about HTTP requests.

Each error carries a stable UPPER_SNAKE ``code`` (the real controller's), a human
message and an optional ``cause`` that is always an object on the wire. The
catalogue declares every code with its default message and the HTTP status the
API edge answers with (as OpenZiti's ``apierror/messages.go``); raise with the
constants (``errors.NOT_FOUND``), never with bare strings. ``api/status.py``
reads the status from here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from typing import Any


@dataclass(frozen=True)
class ErrorCode:
    """A catalogue entry: the wire code, its default message and its HTTP status."""

    code: str
    status: int
    message: str


#: every code the controller answers with, in declaration order (the first per status is its default code)
CATALOGUE: dict[str, ErrorCode] = {}
# NOTE(arch): where the real controller's default message is not recorded, the message spells the code out
# (what clients saw before the catalogue); raisers usually pass a specific message anyway.


def _declare(code: str, status: int, message: str) -> str:
    CATALOGUE[code] = ErrorCode(code, status, message)
    return code


# -- 400 ------------------------------------------------------------
COULD_NOT_VALIDATE = _declare(
    "COULD_NOT_VALIDATE",
    400,
    "The supplied request contains an invalid document or no valid accept content were available, see cause",
)
CERTIFICATE_FAILED_VALIDATION = _declare("CERTIFICATE_FAILED_VALIDATION", 400, "Certificate failed validation")
CERTIFICATE_IS_NOT_CA = _declare("CERTIFICATE_IS_NOT_CA", 400, "Certificate is not ca")
CERT_FAILED_VALIDATION = _declare("CERT_FAILED_VALIDATION", 400, "Cert failed validation")
COULD_NOT_PARSE_BODY = _declare("COULD_NOT_PARSE_BODY", 400, "The body of the request could not be parsed")
COULD_NOT_PARSE_DER_BLOCK = _declare("COULD_NOT_PARSE_DER_BLOCK", 400, "Could not parse der block")
COULD_NOT_PARSE_PEM_BLOCK = _declare("COULD_NOT_PARSE_PEM_BLOCK", 400, "Could not parse pem block")
COULD_NOT_PARSE_PROXY_CERT = _declare("COULD_NOT_PARSE_PROXY_CERT", 400, "Could not parse proxy cert")
COULD_NOT_PARSE_X509_FROM_DER = _declare("COULD_NOT_PARSE_x509_FROM_DER", 400, "Could not parse x509 from der")
COULD_NOT_PROCESS_CSR = _declare("COULD_NOT_PROCESS_CSR", 400, "Could not process csr")
ENROLLMENT_CA_NOT_VALID = _declare("ENROLLMENT_CA_NOT_VALID", 400, "Enrollment ca not valid")
ENROLLMENT_EXPIRED = _declare("ENROLLMENT_EXPIRED", 400, "Enrollment expired")
ENROLLMENT_NO_VALID_CAS = _declare("ENROLLMENT_NO_VALID_CAS", 400, "Enrollment no valid cas")
ENTITY_CAN_NOT_BE_DELETED = _declare(
    "ENTITY_CAN_NOT_BE_DELETED", 400, "The entity requested for delete can not be deleted"
)
ENTITY_CAN_NOT_BE_UPDATED = _declare(
    "ENTITY_CAN_NOT_BE_UPDATED", 400, "The entity requested for update can not be updated"
)
EXPECTED_PEM_CERTIFICATE = _declare("EXPECTED_PEM_CERTIFICATE", 400, "Expected pem certificate")
INVALID_AUTHENTICATOR_PROPERTIES = _declare("INVALID_AUTHENTICATOR_PROPERTIES", 400, "Invalid authenticator properties")
INVALID_AUTH_METHOD = _declare("INVALID_AUTH_METHOD", 400, "The authentication method is not supported")
INVALID_BACKING_TOKEN_TYPE = _declare("INVALID_BACKING_TOKEN_TYPE", 400, "Invalid backing token type")
INVALID_CERT_PEM = _declare("INVALID_CERT_PEM", 400, "Invalid cert pem")
INVALID_CLIENT_CERT = _declare("INVALID_CLIENT_CERT", 400, "Invalid client cert")
INVALID_COMMON_NAME = _declare("INVALID_COMMON_NAME", 400, "Invalid common name")
INVALID_CONTENT_TYPE = _declare("INVALID_CONTENT_TYPE", 400, "Invalid content type")
INVALID_ENROLLMENT_TOKEN = _declare("INVALID_ENROLLMENT_TOKEN", 400, "Invalid enrollment token")
INVALID_ENROLL_METHOD = _declare("INVALID_ENROLL_METHOD", 400, "Invalid enroll method")
INVALID_FILTER = _declare("INVALID_FILTER", 400, "The filter query supplied is invalid")
INVALID_PAGINATION = _declare("INVALID_PAGINATION", 400, "The pagination properties provided are invalid")
INVALID_SORT_IDENTIFIER = _declare("INVALID_SORT_IDENTIFIER", 400, "The sort order supplied is invalid")
INVALID_UUID = _declare("INVALID_UUID", 400, "Invalid uuid")
MFA_INVALID_TOKEN = _declare("MFA_INVALID_TOKEN", 400, "An invalid token/code was provided")
MISSING_CERT_CLAIM = _declare("MISSING_CERT_CLAIM", 400, "Missing cert claim")
MISSING_OR_INVALID_CSR = _declare("MISSING_OR_INVALID_CSR", 400, "Missing or invalid csr")
NO_EDGE_ROUTERS_AVAILABLE = _declare(
    "NO_EDGE_ROUTERS_AVAILABLE", 400, "No edge routers are assigned and online to handle the requested connection"
)
REFERENCED_ENTITY_NOT_FOUND = _declare("REFERENCED_ENTITY_NOT_FOUND", 400, "Referenced entity not found")
#: a cluster operation on a controller that is not one of a cluster (the real one's words)
SERVER_NOT_RUNNING_IN_HA_MODE = _declare(
    "SERVER_NOT_RUNNING_IN_HA_MODE", 400, "The server is not running in HA mode. HA operations are not permitted"
)

# -- 401 ------------------------------------------------------------
UNAUTHORIZED = _declare(
    "UNAUTHORIZED",
    401,
    "The request could not be completed. The session is not authorized or the credentials are invalid",
)
INVALID_AUTH = _declare("INVALID_AUTH", 401, "The authentication request failed")

# -- 403 ------------------------------------------------------------
FORBIDDEN = _declare("FORBIDDEN", 403, "Forbidden")

# -- 404 ------------------------------------------------------------
NOT_FOUND = _declare("NOT_FOUND", 404, "The resource requested was not found or is no longer available")
MFA_ENROLLMENT_NOT_STARTED = _declare("MFA_ENROLLMENT_NOT_STARTED", 404, "Mfa enrollment not started")

# -- 405 ------------------------------------------------------------
METHOD_NOT_ALLOWED = _declare("METHOD_NOT_ALLOWED", 405, "The resource requested does not support this HTTP verb")

# -- 406 ------------------------------------------------------------
NOT_ACCEPTABLE = _declare("NOT_ACCEPTABLE", 406, "Not acceptable")

# -- 409 ------------------------------------------------------------
CONFLICT = _declare("CONFLICT", 409, "Conflict")
CAN_NOT_DELETE_REFERENCED_ENTITY = _declare(
    "CAN_NOT_DELETE_REFERENCED_ENTITY",
    409,
    "The entity requested for delete can not be deleted because it is referenced by other entities",
)
CAN_NOT_UPDATE_AUTHENTICATOR = _declare("CAN_NOT_UPDATE_AUTHENTICATOR", 409, "Can not update authenticator")
CAN_NOT_UPDATE_ROUTER = _declare("CAN_NOT_UPDATE_ROUTER", 409, "Can not update router")
CA_ALREADY_VERIFIED = _declare("CA_ALREADY_VERIFIED", 409, "Ca already verified")
CERT_IN_USE = _declare("CERT_IN_USE", 409, "Cert in use")
ENROLLMENT_EXISTS = _declare("ENROLLMENT_EXISTS", 409, "Enrollment exists")
ENROLLMENT_IDENTITY_ALREADY_ENROLLED = _declare(
    "ENROLLMENT_IDENTITY_ALREADY_ENROLLED", 409, "Enrollment identity already enrolled"
)
INVALID_ENROLLMENT_NOT_ALLOWED = _declare("INVALID_ENROLLMENT_NOT_ALLOWED", 409, "Invalid enrollment not allowed")
INVALID_POSTURE = _declare(
    "INVALID_POSTURE", 409, "The supplied posture did not meet the criteria required for this operation"
)
MAX_AUTHENTICATOR_METHODS_REACHED = _declare(
    "MAX_AUTHENTICATOR_METHODS_REACHED", 409, "Max authenticator methods reached"
)
MFA_EXISTS = _declare("MFA_EXISTS", 409, "Mfa exists")
MFA_NOT_ENROLLED = _declare("MFA_NOT_ENROLLED", 409, "Mfa not enrolled")

# -- 410 ------------------------------------------------------------
INVALID_ENROLLMENT_ALREADY_ENROLLED = _declare(
    "INVALID_ENROLLMENT_ALREADY_ENROLLED", 410, "Invalid enrollment already enrolled"
)

# -- 413 ------------------------------------------------------------
REQUEST_ENTITY_TOO_LARGE = _declare("REQUEST_ENTITY_TOO_LARGE", 413, "The request body is too large")

# -- 415 ------------------------------------------------------------
UNSUPPORTED_MEDIA = _declare("UNSUPPORTED_MEDIA", 415, "The content type of the request is not supported")
#: what the OIDC login endpoints answer for a body that is neither JSON nor a form
UNSUPPORTED_MEDIA_TYPE = _declare("UNSUPPORTED_MEDIA_TYPE", 415, "The content type of the request is not supported")

# -- 429 ------------------------------------------------------------
RATE_LIMITED = _declare(
    "RATE_LIMITED", 429, "The resource is rate limited and the rate limit has been exceeded. Please try again later"
)
SERVER_TOO_MANY_REQUESTS = _declare("SERVER_TOO_MANY_REQUESTS", 429, "Server too many requests")

# -- 500 ------------------------------------------------------------
UNHANDLED = _declare("UNHANDLED", 500, "An unhandled error occurred")

# -- 501 ------------------------------------------------------------
NOT_IMPLEMENTED = _declare("NOT_IMPLEMENTED", 501, "Not implemented")

# -- 503 ------------------------------------------------------------
TIMEOUT = _declare("TIMEOUT", 503, "Timeout")
STORE_UNAVAILABLE = _declare("STORE_UNAVAILABLE", 503, "The data store cannot accept writes at this time")
TRANSFER_LEADERSHIP_ERROR = _declare("TRANSFER_LEADERSHIP_ERROR", 500, "Error while attempting to transfer leadership")
#: a cluster member that cannot get a write committed (the real controller's apierror)
CLUSTER_NO_LEADER = _declare("CLUSTER_NO_LEADER", 503, "Cluster has no leader, unable to make model updates.")

#: messages by code (derived from the catalogue)
MESSAGES = {code: entry.message for code, entry in CATALOGUE.items()}


def message_for(code: str, default: str | None = None) -> str:
    """The catalogue's message for ``code``; for an unknown code, ``default`` or the code spelled out."""
    entry = CATALOGUE.get(code)
    return entry.message if entry else default or code.replace("_", " ").capitalize()


def code_for_status(status: int) -> str | None:
    """The catalogue's default code for an HTTP status (its first entry with that status), if any."""
    return next((entry.code for entry in CATALOGUE.values() if entry.status == status), None)


class ControllerError(Exception):
    """Base of every error that reaches a client as an error envelope."""

    code = UNHANDLED

    def __init__(self, code: str | None = None, message: str | None = None, cause: dict[str, Any] | None = None):
        self.code = code or type(self).code
        self.message = message or message_for(self.code)
        self.cause = cause
        super().__init__(f"{self.code}: {self.message}")


class BadRequest(ControllerError):
    """A request that cannot be served as sent (400)."""

    code = COULD_NOT_VALIDATE


class FieldError(BadRequest):
    """A field of the request is invalid: 400 ``COULD_NOT_VALIDATE`` with a field cause."""

    def __init__(self, field: str, reason: str, value: Any = None, code: str | None = None, message: str | None = None):
        self.field, self.reason, self.value = field, reason, value
        cause = {"field": field, "reason": reason, "value": _stringify(value)}
        super().__init__(code or COULD_NOT_VALIDATE, message, cause)


class InvalidFilter(BadRequest):
    """A bad ``filter`` query (400 ``INVALID_FILTER``)."""

    code = INVALID_FILTER

    def __init__(self, detail: str, code: str = INVALID_FILTER):
        self.detail = detail
        super().__init__(code, None, {"code": UNHANDLED, "message": detail})


class NotFound(ControllerError):
    code = NOT_FOUND

    def __init__(
        self, kind: str | None = None, entity_id: str | None = None, code: str | None = None, message: str | None = None
    ):
        cause = None
        if kind is not None:
            cause = {"code": UNHANDLED, "message": f"{kind} with id {entity_id} not found"}
        super().__init__(code or NOT_FOUND, message, cause)


class Conflict(ControllerError):
    """A state conflict (409)."""

    code = CONFLICT


class ReferenceExists(Conflict):
    """Deleting something still referenced (409 ``CAN_NOT_DELETE_REFERENCED_ENTITY``)."""

    code = CAN_NOT_DELETE_REFERENCED_ENTITY

    def __init__(self, field: str, ids: list[str], message: str | None = None):
        super().__init__(self.code, message, {"field": field, "reason": "referenced", "value": ",".join(ids)})


class Realm(str, Enum):
    """Where refused credentials belong (the real controller's ``WWW-Authenticate`` realms)."""

    ZT_SESSION = "zt-session"
    OIDC = "openziti-oidc"
    EXT_JWT_PRIMARY = "openziti-primary-ext-jwt"
    EXT_JWT_SECONDARY = "openziti-secondary-ext-jwt"


class Reason(str, Enum):
    """Why credentials of a realm were refused."""

    MISSING = "missing"
    INVALID = "invalid"
    EXPIRED = "expired"


@dataclass(frozen=True)
class Challenge:
    """One refusal, as the domain knows it; the API layer renders it as ``WWW-Authenticate``
    (``controller/api/challenges.py``)."""

    realm: Realm
    reason: Reason
    #: the ``(id, issuer)`` of each signer an external-JWT challenge names (None: none named)
    signers: tuple[tuple[str, str], ...] | None = None


class Unauthorized(ControllerError):
    """No valid session, or not allowed to do this (401 ``UNAUTHORIZED``).

    ``challenges``: why the presented credentials were refused (the API answers them in
    ``WWW-Authenticate``); empty when there is nothing to say.
    """

    code = UNAUTHORIZED

    def __init__(
        self, code: str | None = None, message: str | None = None, cause=None, challenges: tuple[Challenge, ...] = ()
    ):
        self.challenges = tuple(challenges)
        super().__init__(code, message, cause)


class InvalidAuth(Unauthorized):
    """Failed authentication, identical for every reason (401 ``INVALID_AUTH``)."""

    code = INVALID_AUTH


class Forbidden(ControllerError):
    code = FORBIDDEN


class Expired(BadRequest):
    code = ENROLLMENT_EXPIRED


class RateLimited(ControllerError):
    code = RATE_LIMITED


class Unavailable(ControllerError):
    """The store cannot write (503); nothing already stored is lost."""

    code = STORE_UNAVAILABLE


class ClusterNoLeader(Unavailable):
    """A cluster member cannot get a write committed: no leader, or no quorum (503)."""

    code = CLUSTER_NO_LEADER


class ReplicaConflict(Conflict):
    """A cluster write refused because a write on another member changed one of its records first (409).

    Nothing of it was written: the API runs the request again (``api/dispatch.py``).
    """


class UnsupportedMedia(ControllerError):
    code = UNSUPPORTED_MEDIA


class TooLarge(ControllerError):
    code = REQUEST_ENTITY_TOO_LARGE


class NotImplementedYet(ControllerError):
    """An operation of the spec this build does not serve yet (501)."""

    code = NOT_IMPLEMENTED


def _stringify(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    try:
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    except (TypeError, ValueError):
        return str(value)
