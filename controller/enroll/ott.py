"""``ott``: a one-time token and a CSR buy a network-issued client certificate."""

from __future__ import annotations

from controller.enroll.registry import FLAG, Collaborators, EnrollRequest, EnrollResult, OneTimeTokens, Route
from controller.pki.certs import fingerprint
from controller.pki.csr import parse_csr


class OttMethod:
    """Sign the CSR for the enrollment's identity; attach a cert authenticator."""

    name = "ott"
    identity_field = FLAG
    summary = "Enroll with a one-time token and a CSR"
    route = Route("enrollOtt", body=("clientCsr", "token"), token_query=True, pem_body=True)

    def __init__(self, tokens: OneTimeTokens, *, pki, store, authenticators):
        self.tokens, self.pki, self.store, self.authenticators = tokens, pki, store, authenticators

    @classmethod
    def build(cls, use: Collaborators) -> OttMethod:
        return cls(use.tokens, pki=use.pki, store=use.store, authenticators=use.authenticators)

    def enroll(self, request: EnrollRequest) -> EnrollResult:
        record, identity = self.tokens.pending_identity(request.token, self.name)
        csr = parse_csr(request.csr or "")
        cert = self.pki.sign_identity_csr(csr, identity["id"])
        chain = self.pki.chain_pem(cert)
        with self.store.lock, self.store.transaction(request.context):
            self.tokens.claim(record)
            self.authenticators.create_cert(identity["id"], chain, fingerprint(cert), issued_by_network=True)
        return EnrollResult({"cert": chain}, pem=chain)
