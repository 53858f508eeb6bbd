"""Certificate lifecycle: own authenticator extension, admin request-extend and re-enroll,
and the ephemeral certificates of the current API session."""

from __future__ import annotations

from controller.api.call import Call, Created
from controller.api.crud import LIST_QUERY
from controller.api.mappers.entity import listing
from controller.api.operations import BOTH, CLIENT, MANAGEMENT, SESSION, Operation, operation_defaults
from controller.api.schemas import api_session_certificate as asc
from controller.api.schemas import authenticator as lifecycle
from controller.store.query import Listing


def extend_own(call: Call, *, cert_lifecycle) -> dict:
    return cert_lifecycle.extend(
        call.identity["id"], call.param(), call.peer_certs, call.body["clientCertCsr"], context=call.change
    )


def extend_verify_own(call: Call, *, cert_lifecycle) -> None:
    cert_lifecycle.verify_extend(call.identity["id"], call.param(), call.body["clientCert"], context=call.change)


def request_extend(call: Call, *, cert_lifecycle) -> None:
    roll_keys = bool((call.body or {}).get("rollKeys"))
    cert_lifecycle.request_extend(call.param(), roll_keys, context=call.change)


def re_enroll(call: Call, *, cert_lifecycle) -> Created:
    return Created("enrollments", cert_lifecycle.re_enroll(call.param(), call.body["expiresAt"], context=call.change))


def list_session_certs(call: Call, *, certificate_view, api_session_certificates) -> Listing:
    mgr = api_session_certificates
    render = certificate_view
    return listing(mgr, call.list_args(), render, candidates=mgr.of_session(call.session["id"]))


def create_session_cert(call: Call, *, certificate_created_view, api_session_certificates) -> dict:
    mgr = api_session_certificates
    return certificate_created_view(mgr.create_for(call.session, call.body["csr"], context=call.change))


def detail_session_cert(call: Call, *, certificate_view, api_session_certificates) -> dict:
    mgr = api_session_certificates
    return certificate_view(mgr.get_own(call.session["id"], call.param()))


def delete_session_cert(call: Call, *, api_session_certificates) -> None:
    api_session_certificates.delete_own(call.session["id"], call.param(), context=call.change)


def operations() -> list[Operation]:
    own = operation_defaults(apis=BOTH, auth=SESSION, tag="Current Identity")
    admin = operation_defaults(apis=(MANAGEMENT,), tag="Authenticator")
    certs = operation_defaults(apis=(CLIENT,), auth=SESSION, tag="Current API Session")
    path = "/current-api-session/certificates"
    return [
        own(
            "extendCurrentIdentityAuthenticator",
            "POST /current-identity/authenticators/{id}/extend",
            extend_own,
            "Issue a new certificate for one's own network-issued certificate",
            body=lifecycle.EXTEND,
        ),
        own(
            "extendVerifyCurrentIdentityAuthenticator",
            "POST /current-identity/authenticators/{id}/extend-verify",
            extend_verify_own,
            "Confirm receipt of the extended certificate; the old one stops working",
            body=lifecycle.EXTEND_VERIFY,
            reply="empty",
        ),
        admin(
            "requestExtendAuthenticator",
            "POST /authenticators/{id}/request-extend",
            request_extend,
            "Ask a certificate authenticator's owner to extend (and maybe roll keys)",
            body=lifecycle.REQUEST_EXTEND,
            body_optional=True,
            reply="empty",
        ),
        admin(
            "reEnrollAuthenticator",
            "POST /authenticators/{id}/re-enroll",
            re_enroll,
            "Replace an authenticator by an enrollment of the matching method",
            body=lifecycle.RE_ENROLL,
            reply="create",
            status=201,
        ),
        certs(
            "listCurrentApiSessionCertificates",
            f"GET {path}",
            list_session_certs,
            "List the current API session's certificates",
            reply="list",
            query=LIST_QUERY,
        ),
        certs(
            "createCurrentApiSessionCertificate",
            f"POST {path}",
            create_session_cert,
            "Sign an ephemeral certificate for the current API session",
            body=asc.CREATE,
            status=201,
        ),
        certs(
            "detailCurrentApiSessionCertificate",
            f"GET {path}/{{id}}",
            detail_session_cert,
            "Retrieve one of the current API session's certificates",
        ),
        certs(
            "deleteCurrentApiSessionCertificate",
            f"DELETE {path}/{{id}}",
            delete_session_cert,
            "Delete one of the current API session's certificates",
            reply="empty",
        ),
    ]
