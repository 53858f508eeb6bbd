"""Enrollment (client API), the EST CA bundle and network JWTs (both APIs); all public.

``POST /enroll?method=...&token=...`` is what real SDKs call: the CSR comes as a
``text/plain`` or ``application/x-pem-file`` body (or JSON ``clientCsr``), and the
reply is JSON unless the client asks only for ``application/x-pem-file``.
"""

from __future__ import annotations

import falcon

from controller.api import envelope
from controller.api.call import Call
from controller.api.dispatch import write_json
from controller.api.operations import BOTH, CLIENT, PUBLIC, Operation, operation_defaults
from controller.api.schemas.enroll import CHALLENGE, GENERIC, ROUTER_EXTEND, route_body
from controller.enroll import keys, router
from controller.enroll.jwt import sign_network_jwt
from controller.enroll.methods import METHOD_NAMES, METHODS
from controller.enroll.registry import EnrollRequest, EnrollResult

PEM_TYPES = ("text/plain", "application/x-pem-file", "application/pkcs7")
PEM_REPLY = "application/x-pem-file"
TOKEN_QUERY = {"token": {"type": "string"}}
ENROLL_QUERY = {"method": {"type": "string", "enum": list(METHOD_NAMES)}, **TOKEN_QUERY}


def enroll_request(call: Call, method: str | None, token: str | None = None, **extra) -> EnrollRequest:
    body = call.body
    data = body if isinstance(body, dict) else {}
    csr = body if isinstance(body, str) else (data.get("clientCsr") or data.get("certCsr"))
    headers = {"ziti-token-issuer-id": call.header("ziti-token-issuer-id")}
    return EnrollRequest(
        method=method,
        token=token or data.get("token") or call.query("token"),
        csr=csr,
        server_csr=data.get("serverCertCsr") or data.get("serverCsr"),
        data=data,
        peers=call.peer_certs,
        headers=headers,
        bearer_tokens=call.bearer_tokens(),
        context=call.change,
        **extra,
    )


def wants_pem(call: Call) -> bool:
    """True only when the client accepts PEM and not JSON (absent or ``*/*`` means JSON)."""
    accept = (call.header("Accept") or "").lower()
    if not accept or "application/json" in accept or "*/*" in accept:
        return False
    return PEM_REPLY in accept


def reply(call: Call, result: EnrollResult) -> None:
    if result.pem is not None and wants_pem(call):
        call.resp.status = falcon.HTTP_200
        call.resp.content_type = PEM_REPLY
        call.resp.text = result.pem
        return
    write_json(call.resp, envelope.ok(result.data))


def enroll(call: Call, *, enroll_methods) -> None:
    reply(call, enroll_methods.enroll(enroll_request(call, call.query("method"))))


def explicit(method: str, **extra):
    def handler(call: Call, *, enroll_methods) -> None:
        reply(call, enroll_methods.enroll(enroll_request(call, method, **extra)))

    handler.__name__ = f"enroll_{method}"
    return handler


def extend_router(call: Call, *, routers, pki) -> dict:
    body = call.body
    return router.extend_router(
        call.peer_certs, body["certCsr"], body["serverCertCsr"], routers=routers, pki=pki, context=call.change
    )


def enrollment_jwks(call: Call, *, pki) -> None:
    write_json(call.resp, keys.jwks(pki))


def enrollment_challenge(call: Call, *, pki) -> None:
    write_json(call.resp, keys.challenge(pki, call.body))


def well_known_cas(call: Call, *, pki) -> None:
    call.resp.status = falcon.HTTP_200
    call.resp.content_type = "application/pkcs7-mime"
    call.resp.set_header("Content-Transfer-Encoding", "base64")
    call.resp.text = pki.cacerts_pkcs7_b64()


def network_jwts(call: Call, *, pki, config, ids) -> list:
    return [{"name": "default", "token": sign_network_jwt(pki, config.base_url, ids.uuid())}]


def operations() -> list[Operation]:
    op = operation_defaults(apis=(CLIENT,), auth=PUBLIC, tag="Enroll")
    enroll_op = operation_defaults(apis=(CLIENT,), auth=PUBLIC, tag="Enroll", reply="raw", body_optional=True)
    return [
        enroll_op(
            "enroll",
            "POST /enroll",
            enroll,
            "Enroll by the method and token in the query",
            body=GENERIC,
            content_types=PEM_TYPES,
            query=ENROLL_QUERY,
        ),
        *(
            enroll_op(
                method.route.op_id,
                f"POST /enroll/{method.name}",
                explicit(method.name, **method.route.options),
                method.summary,
                body=route_body(method.route.body),
                content_types=PEM_TYPES if method.route.pem_body else (),
                query=TOKEN_QUERY if method.route.token_query else {},
            )
            # bodiless routes (``ca``) first: the order the routes have always been registered in
            for method in sorted(METHODS, key=lambda method: method.route.body is not None)
        ),
        op(
            "extendRouterEnrollment",
            "POST /enroll/extend/router",
            extend_router,
            "Extend a router's certificates with its current one",
            body=ROUTER_EXTEND,
        ),
        op(
            "getEnrollmentJwks",
            "GET /enroll/jwks",
            enrollment_jwks,
            "The public keys signing enrollment JWTs",
            reply="raw",
        ),
        op(
            "enrollmentChallenge",
            "POST /enroll/challenge",
            enrollment_challenge,
            "Sign a nonce with an enrollment signing key",
            body=CHALLENGE,
            reply="raw",
        ),
        op(
            "listWellKnownCas",
            "GET /.well-known/est/cacerts",
            well_known_cas,
            "The controller CA certificates as base64 PKCS#7",
            apis=BOTH,
            reply="raw",
            tag="Well Known",
        ),
        op(
            "listNetworkJWTs", "GET /network-jwts", network_jwts, "The network JWTs a client may enroll from", apis=BOTH
        ),
    ]
