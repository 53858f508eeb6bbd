"""``method=ext-jwt`` and the ext-jwt second factor: external JWTs as the real controller checks them.

* Candidates: the request's bearer tokens, up to three, as the API layer read them (non-JWTs ignored).
* Signer: the enabled one whose ``issuer`` equals the token's ``iss`` exactly.
* Checks: ``kid`` header present with a known key, a valid asymmetric
  signature, ``exp`` and ``nbf`` (no leeway, controller clock), ``aud``
  containing the signer's audience.
* Identity: the ``claimsProperty`` claim (JSON pointer, default ``sub``)
  names the identity by ``externalId`` (``useExternalId``) or by id; it must
  be enabled, and its policy must allow ext-jwt and, when it lists signers,
  this signer.

Failures are 401 ``UNAUTHORIZED`` carrying a ``Challenge`` (realm, reason, candidate
signers), which the API layer answers as a ``WWW-Authenticate: Bearer`` header.
"""

from __future__ import annotations

from dataclasses import dataclass

import jwt

from controller import errors
from controller.auth.jwt_keys import SignerKeys, algorithms_for
from controller.auth.request import AuthRequest, Collaborators, Proof
from controller.pki.jwt_signature import TokenRejected, verify_signature

PRIMARY_REALM = errors.Realm.EXT_JWT_PRIMARY
SECONDARY_REALM = errors.Realm.EXT_JWT_SECONDARY
#: worst reason wins when several candidates fail
SEVERITY = {"missing": 0, "invalid": 1, "expired": 2}


@dataclass
class Verified:
    signer: dict
    claims: dict


@dataclass
class Bearer:
    """A bearer token accepted as the primary credential: who it proves, and the token itself."""

    proof: Proof
    token: str
    claims: dict


def claim_at(claims: dict, pointer: str):
    """Resolve ``claimsProperty``: a JSON pointer (``/a/b``) or a top-level claim name."""
    if not pointer.startswith("/"):
        return claims.get(pointer)
    value = claims
    for part in pointer[1:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def challenge(realm: errors.Realm, reason: str, signers: list[dict]) -> errors.Challenge:
    """Why no token of ``signers`` was accepted (the API renders it as ``WWW-Authenticate``)."""
    named = tuple((s["id"], s.get("issuer") or "") for s in signers)
    return errors.Challenge(realm, errors.Reason(reason), named)


class ExtJwtVerifier:
    """Verifies candidate tokens against the configured signers."""

    def __init__(self, *, signers, clock):
        self.signers, self.clock = signers, clock
        self.keys = SignerKeys(clock)

    def verify(self, token: str, signer: dict | None = None) -> Verified:
        try:
            header = jwt.get_unverified_header(token)
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError:
            raise TokenRejected("missing") from None
        found = self.signers.find_by_issuer(unverified.get("iss"))
        if found is None or not found.get("enabled") or (signer is not None and found["id"] != signer["id"]):
            raise TokenRejected("missing")
        claims = self._check_signature(token, header, found)
        self._check_claims(claims, found)
        return Verified(found, claims)

    def _check_signature(self, token: str, header: dict, signer: dict) -> dict:
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise TokenRejected("invalid")
        key = self.keys.key_for(signer, kid)
        allowed = algorithms_for(key) if key is not None else []
        if header.get("alg") not in allowed:
            raise TokenRejected("invalid")
        return verify_signature(token, key, [header["alg"]])

    def _check_claims(self, claims: dict, signer: dict) -> None:
        now = self.clock.now().timestamp()
        exp, nbf = claims.get("exp"), claims.get("nbf")
        for value in (exp, nbf):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise TokenRejected("invalid")
        if exp is not None and now >= exp:
            raise TokenRejected("expired")
        if nbf is not None and now < nbf:
            raise TokenRejected("invalid")
        audience = signer.get("audience")
        aud = claims.get("aud")
        audiences = aud if isinstance(aud, list) else [aud]
        if audience and audience not in audiences:
            raise TokenRejected("invalid")

    def identity_of(self, verified: Verified) -> dict | None:
        subject = claim_at(verified.claims, verified.signer.get("claims_property") or "sub")
        if not isinstance(subject, str) or not subject:
            return None
        return self.signers.identity_for(verified.signer, subject)


class ExtJwtMethod:
    """``method=ext-jwt``: the bearer token is the primary credential."""

    name = "ext-jwt"
    #: no authenticator record: the token's claim names the identity
    authenticator = None
    login_page = "ext-jwt"

    def __init__(self, verifier: ExtJwtVerifier, *, signers, identities):
        self.verifier, self.signers, self.identities = verifier, signers, identities

    @classmethod
    def build(cls, use: Collaborators) -> ExtJwtMethod:
        return cls(use.ext_jwt, signers=use.external_jwt_signers, identities=use.identities)

    def authenticate(self, request: AuthRequest) -> Proof:
        return self.prove(request.bearer_tokens).proof

    def prove(self, tokens) -> "Bearer":
        """The first of ``tokens`` that names an identity allowed to log in by it; 401 with a challenge if none."""
        signers = self.signers.enabled()
        if not signers:
            raise errors.Unauthorized()
        worst = "missing"
        for token in tokens:
            try:
                verified = self.verifier.verify(token)
            except TokenRejected as ex:
                worst = max(worst, ex.reason, key=SEVERITY.get)
                continue
            identity = self.verifier.identity_of(verified)
            if identity is not None and self._allowed(identity, verified.signer):
                return Bearer(Proof(identity, f"extJwtId:{verified.signer['id']}"), token, verified.claims)
        raise errors.Unauthorized(challenges=(challenge(PRIMARY_REALM, worst, signers),))

    def _allowed(self, identity: dict, signer: dict) -> bool:
        if self.identities.is_disabled(identity):
            return False
        ext_jwt = self.identities.auth_policy_of(identity).get("primary", {}).get("ext_jwt", {})
        allowed_signers = ext_jwt.get("allowed_signers") or []
        return bool(ext_jwt.get("allowed", True)) and (not allowed_signers or signer["id"] in allowed_signers)


class ExtJwtSecondary:
    """``secondary.requireExtJwtSigner``: every request carries a valid bearer of that signer."""

    def __init__(self, verifier: ExtJwtVerifier, *, signers):
        self.verifier, self.signers = verifier, signers

    def check(self, identity: dict, policy: dict, tokens) -> tuple[list[dict], str | None]:
        """The required signers whose token is still owed and the ``WWW-Authenticate`` challenge naming them."""
        signer_id = (policy.get("secondary") or {}).get("require_ext_jwt_signer")
        if not signer_id:
            return [], None
        signer = self.signers.find(signer_id) or {"id": signer_id}
        reason = self._check_tokens(signer, identity, tokens)
        if reason is None:
            return [], None
        return [signer], challenge(SECONDARY_REALM, reason, [signer])

    def _check_tokens(self, signer: dict, identity: dict, tokens) -> str | None:
        """None when ``tokens`` hold a valid bearer of ``signer`` for ``identity``, else the worst reason."""
        if not signer.get("enabled"):
            return "missing"
        worst = "missing"
        for token in tokens:
            try:
                verified = self.verifier.verify(token, signer)
            except TokenRejected as ex:
                worst = max(worst, ex.reason, key=SEVERITY.get)
                continue
            found = self.verifier.identity_of(verified)
            if found is not None and found["id"] == identity.get("id"):
                return None
        return worst
