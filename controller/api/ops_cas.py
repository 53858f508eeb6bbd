"""Management operations on third-party CAs: CRUD, verification and the CA enrollment JWT."""

from __future__ import annotations

import falcon

from controller.api.call import Call
from controller.api.crud import crud
from controller.api.mappers.ca import ca_view
from controller.api.operations import MANAGEMENT, Operation
from controller.api.schemas import ca
from controller.enroll.jwt import sign_ca_jwt
from controller.model.ca import CaManager


def verify_ca(call: Call, *, cas) -> None:
    cas.verify(call.param(), call.body, context=call.change)


def ca_jwt(call: Call, *, cas, pki, config) -> None:
    ca = cas.get(call.param())
    call.resp.status = falcon.HTTP_200
    call.resp.content_type = "application/jwt"
    call.resp.text = sign_ca_jwt(pki, config.base_url, ca["id"])


def operations() -> list[Operation]:
    ops = crud(CaManager, schemas=ca.BODIES, tag="Certificate Authority", view=ca_view)
    ops += [
        Operation(
            "verifyCa",
            "POST",
            "/cas/{id}/verify",
            verify_ca,
            apis=(MANAGEMENT,),
            reply="empty",
            content_types=("text/plain", "application/x-pem-file"),
            tag="Certificate Authority",
            summary="Verify a CA with a certificate it signed whose CN is the verification token",
        ),
        Operation(
            "getCaJwt",
            "GET",
            "/cas/{id}/jwt",
            ca_jwt,
            apis=(MANAGEMENT,),
            reply="raw",
            tag="Certificate Authority",
            summary="The CA auto-enrollment JWT as application/jwt",
        ),
    ]
    return ops
