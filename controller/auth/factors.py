"""Second factors: which ones a login or a session still owes.

TOTP is owed when the identity has a verified MFA enrollment (legacy sessions
record that as ``isMfaRequired`` at login) or its authentication policy says
``requireTotp``, until a code is given. An ext-jwt factor is owed on every
request that lacks a valid bearer of the policy's ``requireExtJwtSigner``.
"""

from __future__ import annotations

from controller.auth.request import Pending


class SecondaryFactors:
    """Evaluates the second factors of an identity for one request."""

    def __init__(self, identities, mfas, ext_jwt_secondary):
        self.identities, self.mfas, self.ext_jwt = identities, mfas, ext_jwt_secondary

    def mfa_enabled(self, identity_id: str) -> bool:
        """True when the identity has a verified TOTP enrollment."""
        record = self.mfas.of(identity_id)
        return bool(record and record.get("is_verified"))

    def pending(
        self, identity: dict, *, totp_required: bool, totp_done: bool, bearer_tokens=(), policy: dict | None = None
    ) -> Pending:
        """What ``identity`` still owes, given what its session has done (``policy``: its auth policy, if in hand)."""
        policy = self.identities.auth_policy_of(identity) if policy is None else policy
        secondary = policy.get("secondary", {})
        totp = bool((totp_required or secondary.get("require_totp")) and not totp_done)
        signers, challenge = self.ext_jwt.check(identity, policy, bearer_tokens)
        return Pending(totp, signers, challenge)
