"""``method=cert``: the client certificate presented on the TLS connection.

Order of the checks (the real controller's):

1. The chain comes only from the TLS layer (``AuthRequest.peer_certs``); none is INVALID_AUTH.
2. It must verify, leaf dates ignored and any EKU, against the controller root,
   else the root with the controller intermediate added (the client forgot to
   send it: ``improperClientCertChain``), else a third-party CA that is verified
   and has ``isAuthEnabled``.
3. A third-party CA with an ``externalIdClaim`` names the identity by externalId
   (no authenticator, ``authenticatorId`` "internal"); otherwise the cert
   authenticator is found by the leaf's SHA-1 fingerprint.
4. Disabled identity, policy ``cert.allowed`` false, or an expired leaf under
   ``allowExpiredCerts`` false: INVALID_AUTH, the same answer for every reason.
"""

from __future__ import annotations

from cryptography import x509

from controller import errors
from controller.auth.request import AuthRequest, Collaborators, Proof
from controller.pki import claims
from controller.pki.certs import fingerprint, is_expired

#: authenticatorId of sessions opened by an externalId claim (no authenticator record)
INTERNAL_AUTHENTICATOR = "internal"


class CertMethod:
    """``method=cert``: resolve the TLS peer chain to an identity."""

    name = "cert"
    #: the authenticators it checks (their ``method``, and their key in an identity's ``authenticators``)
    authenticator = "cert"
    login_page = "cert"

    def __init__(self, *, pki, cas, authenticators, identities, clock):
        self.pki, self.cas, self.clock = pki, cas, clock
        self.authenticators, self.identities = authenticators, identities

    @classmethod
    def build(cls, use: Collaborators) -> CertMethod:
        return cls(
            pki=use.pki, cas=use.cas, authenticators=use.authenticators, identities=use.identities, clock=use.clock
        )

    def authenticate(self, request: AuthRequest) -> Proof:
        peers = list(request.peer_certs)
        if not peers:
            raise errors.InvalidAuth()
        leaf = peers[0]
        chain, improper = self.pki.verify_peer_chain(peers)
        ca = None
        if chain is None:
            ca = self.cas.issuer_of(
                peers, lambda r: bool(r.get("is_auth_enabled")), check_leaf=False, client_auth=False
            )
            if ca is None:
                raise errors.InvalidAuth()
        identity, authenticator = self._resolve(leaf, ca)
        self._check(identity, leaf)
        return Proof(
            identity,
            authenticator["id"] if authenticator else INTERNAL_AUTHENTICATOR,
            self._flags(authenticator, ca is None, improper),
        )

    def _resolve(self, leaf: x509.Certificate, ca: dict | None) -> tuple[dict, dict | None]:
        if ca is not None and claims.is_configured(ca.get("external_id_claim")):
            try:
                external_id = claims.external_id(ca["external_id_claim"], leaf)
            except claims.ClaimNotFound:
                raise errors.InvalidAuth() from None
            identity = self.cas.identity_by_external_id(external_id)
            if identity is None:
                raise errors.InvalidAuth()
            return identity, None
        authenticator = self.authenticators.find_cert(fingerprint(leaf))
        if authenticator is None:
            raise errors.InvalidAuth()
        identity = self.identities.find(authenticator["identity_id"])
        if identity is None:
            raise errors.InvalidAuth()
        return identity, authenticator

    def _check(self, identity: dict, leaf: x509.Certificate) -> None:
        if self.identities.is_disabled(identity):
            raise errors.InvalidAuth()
        cert_policy = self.identities.auth_policy_of(identity).get("primary", {}).get("cert", {})
        if not cert_policy.get("allowed", True):
            raise errors.InvalidAuth()
        # APPSEC(cert): the leaf's validity is judged here, at the injected clock,
        # because chain verification above deliberately ignored the leaf's dates.
        if not cert_policy.get("allow_expired_certs", True) and is_expired(leaf, self.clock.now()):
            raise errors.InvalidAuth()

    @staticmethod
    def _flags(authenticator: dict | None, network_chain: bool, improper: bool) -> dict:
        flags = {
            "is_cert_extendable": bool(network_chain and authenticator and authenticator.get("is_issued_by_network"))
        }
        if improper:
            flags["improper_client_cert_chain"] = True
        if authenticator and authenticator.get("is_extend_requested"):
            flags["is_cert_extend_requested"] = True
            flags["is_cert_key_roll_requested"] = bool(authenticator.get("is_key_roll_requested"))
        return flags
