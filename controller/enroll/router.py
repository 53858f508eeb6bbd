"""Router enrollment (``erott`` for edge routers, ``trott`` for transit routers) and extension.

Written against a small interface of the routers model (``routers``):
``find(id)``, ``find_by_fingerprint(fp)`` and
``mark_enrolled(router_id, cert_pem, fingerprint, server_cert_pem)``.
"""

from __future__ import annotations

from controller import errors
from controller.enroll.registry import (
    Collaborators,
    EnrollRequest,
    EnrollResult,
    OneTimeTokens,
    Route,
    expired,
    invalid_token,
)
from controller.model.ca import common_name
from controller.pki.certs import fingerprint, load_pem_cert
from controller.pki.csr import parse_csr
from controller.store.change_context import ChangeContext

ROUTER_ID_KEYS = ("edge_router_id", "transit_router_id", "router_id")


def router_id_of(record: dict) -> str | None:
    return next((record[key] for key in ROUTER_ID_KEYS if record.get(key)), None)


class RouterMethod:
    """``erott`` / ``trott``: sign the router's client and server CSRs; the router becomes verified."""

    names = ("erott", "trott")
    name = "erott"
    identity_field = None
    summary = "Enroll an edge router"
    route = Route("enrollErOtt", body=("clientCsr", "serverCsr", "token", "certCsr", "serverCertCsr"))

    def __init__(self, tokens: OneTimeTokens, *, enrollments, routers, pki, store):
        self.tokens, self.enrollments, self.routers = tokens, enrollments, routers
        self.pki, self.store = pki, store

    @classmethod
    def build(cls, use: Collaborators) -> RouterMethod:
        return cls(use.tokens, enrollments=use.enrollments, routers=use.routers, pki=use.pki, store=use.store)

    def enroll(self, request: EnrollRequest) -> EnrollResult:
        record = self.enrollments.find_by_token(request.token) if request.token else None
        if record is None:
            raise invalid_token()
        if record["method"] != request.method:
            raise errors.BadRequest(
                errors.INVALID_ENROLL_METHOD, f"the enrollment token is not for method {request.method}"
            )
        router_id = router_id_of(record)
        if router_id is None or self.routers.find(router_id) is None:
            raise invalid_token()
        if self.enrollments.is_expired(record):
            raise expired()
        if not request.server_csr or not request.csr:
            raise errors.BadRequest(errors.MISSING_OR_INVALID_CSR, "both a client and a server CSR are required")
        client, server = sign_router_csrs(self.pki, router_id, request.csr, request.server_csr)
        with self.store.lock, self.store.transaction(request.context):
            self.tokens.claim(record)
            self.routers.mark_enrolled(router_id, client, fingerprint_of(client), server)
        return EnrollResult({"cert": client, "serverCert": server, "ca": self.pki.ca_bundle_pem()}, pem=client)


def sign_router_csrs(pki, router_id: str, client_pem: str, server_pem: str) -> tuple[str, str]:
    """Both chains as PEM; the client CSR's CN must be the router id (COULD_NOT_PROCESS_CSR)."""
    server_csr = parse_csr(server_pem)
    client_csr = parse_csr(client_pem)
    if common_name(client_csr) != router_id:
        raise errors.BadRequest(
            errors.COULD_NOT_PROCESS_CSR, "could not process CSR: the client CSR's common name must be the router id"
        )
    client_cert, server_cert = pki.sign_router_csrs(client_csr, server_csr)
    return pki.chain_pem(client_cert), pki.chain_pem(server_cert)


def fingerprint_of(chain_pem: str) -> str:
    return fingerprint(load_pem_cert(chain_pem))


def extend_router(
    peers: list, cert_csr: str, server_csr: str, *, routers, pki, context: ChangeContext | None = None
) -> dict:
    """``extendRouterEnrollment``: the router's current certificate must be on the TLS connection."""
    # APPSEC(router-extend): only the enrolled router, proven by its client certificate
    # chaining to the controller CA, may replace its certificates.
    if not peers or pki.verify_peer_chain(peers)[0] is None:
        raise errors.Unauthorized()
    router = routers.find_by_fingerprint(fingerprint(peers[0]))
    if router is None:
        raise errors.Unauthorized()
    client, server = sign_router_csrs(pki, router["id"], cert_csr, server_csr)
    routers.mark_enrolled(router["id"], client, fingerprint_of(client), server, context=context)
    return {"cert": client, "serverCert": server, "ca": pki.ca_bundle_pem()}
