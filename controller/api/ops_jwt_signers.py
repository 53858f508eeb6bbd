"""External JWT signers: management CRUD and the unauthenticated client listing."""

from __future__ import annotations

from controller.api.call import Call
from controller.api.crud import LIST_QUERY, crud
from controller.api.mappers.entity import listing
from controller.api.mappers.external_jwt_signer import signer_view
from controller.api.operations import CLIENT, PUBLIC, Operation
from controller.api.schemas import external_jwt_signer
from controller.model.external_jwt_signer import ExternalJwtSignerManager
from controller.store.query import Listing


def list_client_external_jwt_signers(call: Call, *, client_signer_view, external_jwt_signers) -> Listing:
    mgr = external_jwt_signers
    return listing(mgr, call.list_args(), client_signer_view)


def operations() -> list[Operation]:
    ops = crud(
        ExternalJwtSignerManager, schemas=external_jwt_signer.BODIES, tag="External JWT Signer", view=signer_view
    )
    ops.append(
        Operation(
            "listExternalJwtSigners",
            "GET",
            "/external-jwt-signers",
            list_client_external_jwt_signers,
            apis=(CLIENT,),
            auth=PUBLIC,
            reply="list",
            tag="External JWT Signer",
            query=LIST_QUERY,
            summary="List the external JWT signers a client may authenticate with",
        )
    )
    return ops
