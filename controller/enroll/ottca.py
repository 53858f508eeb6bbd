"""``ottca``: a one-time token plus a client certificate from the enrollment's CA."""

from __future__ import annotations

from controller import errors
from controller.enroll.registry import (
    Collaborators,
    EnrollRequest,
    EnrollResult,
    OneTimeTokens,
    Route,
    cert_in_use,
    invalid_token,
)
from controller.pki.certs import cert_pem, fingerprint


class OttCaMethod:
    """Attach the presented certificate (not network-issued) to the enrollment's identity."""

    name = "ottca"
    #: an identity's create body names the CA: ``{"ottca": "<caId>"}``
    identity_field = "caId"
    summary = "Enroll with a one-time token and a certificate from the enrollment's CA"
    route = Route("enrollOttCa", body=("clientCsr", "token"), token_query=True)

    def __init__(self, tokens: OneTimeTokens, *, cas, store, authenticators):
        self.tokens, self.cas, self.store, self.authenticators = tokens, cas, store, authenticators

    @classmethod
    def build(cls, use: Collaborators) -> OttCaMethod:
        return cls(use.tokens, cas=use.cas, store=use.store, authenticators=use.authenticators)

    def enroll(self, request: EnrollRequest) -> EnrollResult:
        record, identity = self.tokens.pending_identity(request.token, self.name)
        ca = self.cas.find(record.get("ca_id")) if record.get("ca_id") else None
        if ca is None:
            raise invalid_token()
        # NOTE(enroll): an unverified CA is usable for nothing, so it fails like a disabled one.
        if not ca.get("is_ott_ca_enrollment_enabled") or not ca.get("is_verified"):
            raise errors.BadRequest(
                errors.ENROLLMENT_CA_NOT_VALID, "the CA of this enrollment does not allow OTT-CA enrollment"
            )
        if not self.cas.verifies_with(ca, request.peers, check_leaf=True, client_auth=True):
            raise errors.BadRequest(
                errors.CERTIFICATE_FAILED_VALIDATION,
                "the client certificate was not issued by the CA of this enrollment",
            )
        leaf = request.peers[0]
        fp = fingerprint(leaf)
        if self.authenticators.find_cert(fp) is not None:
            raise cert_in_use(fp)
        with self.store.lock, self.store.transaction(request.context):
            self.tokens.claim(record)
            auth_id = self.authenticators.create_cert(identity["id"], cert_pem(leaf), fp, issued_by_network=False)
            self.authenticators.touch(auth_id, ca_id=ca["id"])
        return EnrollResult({})
