"""``token``: enrollment with an external JWT (``Authorization: Bearer``) from an external JWT signer.

The token is verified like an ext-jwt login (``ExtJwtVerifier``): issuer, key,
signature, ``exp``/``nbf`` and audience. Then, as the real controller:

* the signer's ``claimsProperty`` claim is the new identity's externalId (an
  identity already holding it: 409 ENROLLMENT_IDENTITY_ALREADY_ENROLLED);
* ``enrollNameClaimsSelector`` (default ``/sub``) names it and
  ``enrollAttributeClaimsSelector`` gives its role attributes;
* a ``clientCsr`` asks for a certificate (``enrollToCertEnabled``), none for a
  token-only identity (``enrollToTokenEnabled``); the signer's
  ``enrollAuthPolicyId`` (else the default policy) must allow that method.

Any token that does not verify is 400 INVALID_ENROLLMENT_TOKEN.
"""

from __future__ import annotations

from controller import errors
from controller.auth.ext_jwt import ExtJwtVerifier, TokenRejected, claim_at
from controller.enroll.registry import Collaborators, EnrollRequest, EnrollResult, Route, invalid_token
from controller.model.identity import DEFAULT_AUTH_POLICY
from controller.pki.certs import fingerprint
from controller.pki.csr import parse_csr


def not_allowed(reason: str) -> errors.Conflict:
    return errors.Conflict(errors.INVALID_ENROLLMENT_NOT_ALLOWED, f"The enrollment is not allowed: {reason}")


class TokenMethod:
    name = "token"
    identity_field = None
    summary = "Enroll with an external JWT"
    route = Route("enrollToken", body=("clientCsr",))

    def __init__(
        self, verifier: ExtJwtVerifier, *, signers, auth_policies, cas, identities, authenticators, pki, store, ids
    ):
        self.verifier, self.signers, self.auth_policies = verifier, signers, auth_policies
        self.cas, self.identities, self.authenticators = cas, identities, authenticators
        self.pki, self.store, self.ids = pki, store, ids

    @classmethod
    def build(cls, use: Collaborators) -> TokenMethod:
        return cls(
            use.ext_jwt,
            signers=use.external_jwt_signers,
            auth_policies=use.auth_policies,
            cas=use.cas,
            identities=use.identities,
            authenticators=use.authenticators,
            pki=use.pki,
            store=use.store,
            ids=use.ids,
        )

    def enroll(self, request: EnrollRequest) -> EnrollResult:
        signer, claims = self._verify(request)
        external_id = claim_at(claims, signer.get("claims_property") or "sub")
        name = claim_at(claims, signer.get("enroll_name_claims_selector") or "/sub")
        if not isinstance(external_id, str) or not external_id or not isinstance(name, str) or not name:
            raise invalid_token()
        if self.cas.identity_by_external_id(external_id) is not None:
            raise errors.Conflict(
                errors.ENROLLMENT_IDENTITY_ALREADY_ENROLLED, "An identity with this external id is already enrolled"
            )
        policy_id = self._check_allowed(signer, bool(request.csr))
        identity_id, cert = self.ids.short(), None
        if request.csr:
            cert = self.pki.sign_identity_csr(parse_csr(request.csr), identity_id)
        with self.store.lock, self.store.transaction(request.context):
            self.identities.create_system(
                {
                    "id": identity_id,
                    "name": name,
                    "type_id": "Default",
                    "auth_policy_id": policy_id,
                    "role_attributes": _attributes(claims, signer.get("enroll_attribute_claims_selector")),
                    "external_id": external_id,
                }
            )
            if cert is not None:
                chain = self.pki.chain_pem(cert)
                self.authenticators.create_cert(identity_id, chain, fingerprint(cert), issued_by_network=True)
        if cert is None:
            return EnrollResult({})
        return EnrollResult({"cert": chain, "ca": self.pki.ca_bundle_pem()}, pem=chain)

    def _verify(self, request: EnrollRequest) -> tuple[dict, dict]:
        wanted = None
        issuer_id = request.headers.get("ziti-token-issuer-id")
        if issuer_id:
            wanted = self.signers.find(issuer_id)
            if wanted is None or not wanted.get("enabled"):
                raise invalid_token()
        for token in request.bearer_tokens:
            try:
                verified = self.verifier.verify(token, wanted)
            except TokenRejected:
                continue
            return verified.signer, verified.claims
        raise invalid_token()

    def _check_allowed(self, signer: dict, cert_enrollment: bool) -> str:
        if cert_enrollment and not signer.get("enroll_to_cert_enabled"):
            raise not_allowed("the token issuer does not allow certificate enrollment")
        if not cert_enrollment and not signer.get("enroll_to_token_enabled"):
            raise not_allowed("the token issuer does not allow token enrollment")
        policy_id = signer.get("enroll_auth_policy_id") or DEFAULT_AUTH_POLICY
        policy = self.auth_policies.find(policy_id)
        if policy is None:
            raise errors.ControllerError(errors.UNHANDLED, "could not read the enrollment auth policy")
        primary = policy.get("primary", {})
        if cert_enrollment and not primary.get("cert", {}).get("allowed", True):
            raise not_allowed("the auth policy does not allow certificate authentication")
        if not cert_enrollment:
            ext_jwt = primary.get("ext_jwt", {})
            signers = ext_jwt.get("allowed_signers") or []
            if not ext_jwt.get("allowed", True) or (signers and signer["id"] not in signers):
                raise not_allowed("the auth policy does not allow this token issuer")
        return policy_id


def _attributes(claims: dict, selector: str | None) -> list[str]:
    if not selector:
        return []
    value = claim_at(claims, selector)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []
