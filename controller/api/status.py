"""The one place that decides an error's HTTP status."""
from __future__ import annotations

from controller import errors

#: codes the real controller answers with 400
BAD_REQUEST_CODES = (
    "COULD_NOT_VALIDATE", "COULD_NOT_PARSE_BODY", "INVALID_FILTER", "INVALID_PAGINATION", "INVALID_SORT_IDENTIFIER",
    "ENTITY_CAN_NOT_BE_DELETED", "ENTITY_CAN_NOT_BE_UPDATED", "INVALID_AUTH_METHOD", "ENROLLMENT_EXPIRED",
    "COULD_NOT_PROCESS_CSR", "ENROLLMENT_CA_NOT_VALID", "ENROLLMENT_NO_VALID_CAS", "INVALID_ENROLLMENT_TOKEN",
    "INVALID_ENROLL_METHOD", "MISSING_OR_INVALID_CSR", "NO_EDGE_ROUTERS_AVAILABLE", "COULD_NOT_PARSE_x509_FROM_DER",
    "CERT_FAILED_VALIDATION", "EXPECTED_PEM_CERTIFICATE", "COULD_NOT_PARSE_DER_BLOCK", "COULD_NOT_PARSE_PEM_BLOCK",
    "INVALID_COMMON_NAME", "CERTIFICATE_FAILED_VALIDATION", "CERTIFICATE_IS_NOT_CA", "INVALID_AUTHENTICATOR_PROPERTIES",
    "MFA_INVALID_TOKEN", "INVALID_BACKING_TOKEN_TYPE", "MISSING_CERT_CLAIM", "INVALID_CLIENT_CERT", "INVALID_CERT_PEM",
    "REFERENCED_ENTITY_NOT_FOUND", "INVALID_UUID", "INVALID_CONTENT_TYPE", "COULD_NOT_PARSE_PROXY_CERT",
)

#: statuses by error code, from the real controller's error table
STATUS_BY_CODE = {
    **{code: 400 for code in BAD_REQUEST_CODES},
    "UNAUTHORIZED": 401,
    "INVALID_AUTH": 401,
    "NOT_FOUND": 404,
    "MFA_ENROLLMENT_NOT_STARTED": 404,
    "METHOD_NOT_ALLOWED": 405,
    "NOT_ACCEPTABLE": 406,
    "ENROLLMENT_IDENTITY_ALREADY_ENROLLED": 409,
    "INVALID_ENROLLMENT_NOT_ALLOWED": 409,
    "CERT_IN_USE": 409,
    "CA_ALREADY_VERIFIED": 409,
    "CAN_NOT_UPDATE_AUTHENTICATOR": 409,
    "CAN_NOT_UPDATE_ROUTER": 409,
    "MAX_AUTHENTICATOR_METHODS_REACHED": 409,
    "INVALID_POSTURE": 409,
    "MFA_EXISTS": 409,
    "MFA_NOT_ENROLLED": 409,
    "CAN_NOT_DELETE_REFERENCED_ENTITY": 409,
    "ENROLLMENT_EXISTS": 409,
    # enrollment and PKI (400 unless listed above)
    "ENROLLMENT_EXPIRED": 400,
    "INVALID_ENROLLMENT_TOKEN": 400,
    "INVALID_ENROLL_METHOD": 400,
    "COULD_NOT_PROCESS_CSR": 400,
    "MISSING_OR_INVALID_CSR": 400,
    "ENROLLMENT_CA_NOT_VALID": 400,
    "ENROLLMENT_NO_VALID_CAS": 400,
    "CERT_FAILED_VALIDATION": 400,
    "CERTIFICATE_FAILED_VALIDATION": 400,
    "CERTIFICATE_IS_NOT_CA": 400,
    "MISSING_CERT_CLAIM": 400,
    "INVALID_CLIENT_CERT": 400,
    "INVALID_COMMON_NAME": 400,
    "EXPECTED_PEM_CERTIFICATE": 400,
    "COULD_NOT_PARSE_DER_BLOCK": 400,
    "COULD_NOT_PARSE_PEM_BLOCK": 400,
    "INVALID_CERT_PEM": 400,
    "INVALID_ENROLLMENT_ALREADY_ENROLLED": 410,
    "REQUEST_ENTITY_TOO_LARGE": 413,
    "UNSUPPORTED_MEDIA": 415,
    "RATE_LIMITED": 429,
    "SERVER_TOO_MANY_REQUESTS": 429,
    "FORBIDDEN": 403,
    "UNHANDLED": 500,
    "NOT_IMPLEMENTED": 501,
    "TIMEOUT": 503,
    "STORE_UNAVAILABLE": 503,
}

STATUS_BY_CLASS = [
    (errors.InvalidAuth, 401),
    (errors.Unauthorized, 401),
    (errors.NotFound, 404),
    (errors.Forbidden, 403),
    (errors.Conflict, 409),
    (errors.RateLimited, 429),
    (errors.Unavailable, 503),
    (errors.UnsupportedMedia, 415),
    (errors.TooLarge, 413),
    (errors.NotImplementedYet, 501),
    (errors.BadRequest, 400),
]


def status_of(ex: errors.ControllerError) -> int:
    """HTTP status of a domain error: carried (injected faults), by code, then by class."""
    carried = getattr(ex, "status", None)
    if isinstance(carried, int):
        return carried
    if ex.code in STATUS_BY_CODE:
        return STATUS_BY_CODE[ex.code]
    for cls, status in STATUS_BY_CLASS:
        if isinstance(ex, cls):
            return status
    return 500
