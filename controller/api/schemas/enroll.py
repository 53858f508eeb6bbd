"""Enrollment bodies: ``/enroll`` (any method), each method's own route, router extension, the challenge."""

from __future__ import annotations

from controller.model import schema as s

#: ``POST /enroll?method=``: the fields of every method
GENERIC = s.obj(
    {
        "certCsr": s.string(),
        "clientCsr": s.string(),
        "name": s.string(),
        "password": s.PASSWORD,
        "serverCertCsr": s.string(),
        "username": s.USERNAME,
    }
)
ROUTER_EXTEND = s.obj({"certCsr": s.string(), "serverCertCsr": s.string()}, required=("serverCertCsr", "certCsr"))
CHALLENGE = s.obj({"keyId": s.string(), "nonce": {"type": "string", "format": "uuid"}}, required=("nonce", "keyId"))
#: the type of a body field an enrollment method's route declares (any other: a string)
BODY_FIELDS = {"password": s.PASSWORD, "username": s.USERNAME}


def route_body(fields: tuple[str, ...] | None) -> dict | None:
    """The JSON schema of a method's declared body fields (``Route.body``; every field optional)."""
    return None if fields is None else s.obj({name: BODY_FIELDS.get(name, s.string()) for name in fields})
