"""``ott``: a one-time token and a CSR buy a network-issued client certificate."""

from __future__ import annotations

from controller.enroll.registry import EnrollRequest, EnrollResult, claim, pending_identity
from controller.pki.certs import fingerprint
from controller.pki.csr import parse_csr


class OttMethod:
    """Sign the CSR for the enrollment's identity; attach a cert authenticator."""

    name = "ott"

    def __init__(self, ctl):
        self.ctl = ctl

    def enroll(self, request: EnrollRequest) -> EnrollResult:
        ctl = self.ctl
        record, identity = pending_identity(ctl, request.token, self.name)
        csr = parse_csr(request.csr or "")
        cert = ctl.pki.sign_identity_csr(csr, identity["id"])
        chain = ctl.pki.chain_pem(cert)
        with ctl.store.lock, ctl.store.transaction():
            claim(ctl, record)
            ctl.authenticators.create_cert(identity["id"], chain, fingerprint(cert), issued_by_network=True)
        return EnrollResult({"cert": chain}, pem=chain)
