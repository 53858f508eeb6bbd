"""OIDC access tokens as API sessions on the Edge Client and Management APIs.

A bearer access token is checked (signature by ``kid``, expiry, type,
revocations, proof of possession of the bound certificate, the identity
present and enabled), then stands for an API session built from its claims:
nothing is stored, ``id`` is ``z_asid``. Second factors are evaluated again
on every request: a policy requiring TOTP when ``amr`` lacks ``totp`` makes
the session partial.
"""

from __future__ import annotations

from datetime import datetime, timezone

from controller import errors
from controller.auth.session_tokens import Presented, ResolvedSession
from controller.clock import rfc3339
from controller.oidc.tokens import ACCESS, TokenRejected, unverified_claims
from controller.pki.certs import fingerprint, is_expired
from controller.store.change_context import ChangeContext


def rejected(reason: str) -> errors.Unauthorized:
    """An OIDC access token refused for ``reason`` (``"expired"``, ``"invalid"``)."""
    return errors.Unauthorized(challenges=(errors.Challenge(errors.Realm.OIDC, errors.Reason(reason)),))


def holds_bound_cert(claims: dict, peer_certs, now: datetime, peer_fingerprint: str | None = None) -> bool:
    """Proof of possession: with ``z_cfs`` set, the TLS client certificate must be one of them.

    A caller that knows only the certificate's fingerprint (a router) cannot tell its dates.
    """
    bound = claims.get("z_cfs") or []
    if not bound:
        return True
    if not peer_certs:
        return peer_fingerprint is not None and peer_fingerprint in bound
    if fingerprint(peer_certs[0]) not in bound:
        return False
    return bool(claims.get("z_cae")) or not is_expired(peer_certs[0], now)


class OidcSessions:
    """Resolves access tokens; ends OIDC sessions."""

    def __init__(self, signer, revocations, *, identities, factors, api_sessions, sessions, store, clock):
        self.signer, self.revocations = signer, revocations
        self.identities, self.factors, self.api_sessions = identities, factors, api_sessions
        self.sessions, self.store, self.clock = sessions, store, clock

    def is_access_token(self, token: str) -> bool:
        claims = self.signer.known_claims(token)
        if claims is None:
            if not self.signer.looks_like_ours(token):
                return False
            claims = unverified_claims(token) or {}
        return claims.get("z_t") == ACCESS and bool(claims.get("z_asid"))

    def admin_candidate(self, token: str) -> str | None:
        """The subject of a valid, unrevoked access token (its certificate binding is checked later)."""
        try:
            claims = self.signer.verify(token, ACCESS)
        except TokenRejected:
            return None
        return None if self.revocations.is_revoked(claims) else claims.get("sub")

    def resolve(self, token: str, presented: Presented, others=()) -> ResolvedSession:
        try:
            claims = self.signer.verify(token, ACCESS)
        except TokenRejected as ex:
            raise rejected(ex.reason) from None
        identity = self.identities.find(claims["sub"])
        if identity is None or self.revocations.is_revoked(claims):
            raise rejected("invalid")
        if not holds_bound_cert(claims, presented.peer_certs, self.clock.now(), presented.peer_fingerprint):
            raise rejected("invalid")
        if self.identities.is_disabled(identity):
            raise errors.Unauthorized()
        pending = self.factors.pending(
            identity, totp_required=False, totp_done="totp" in (claims.get("amr") or []), bearer_tokens=others
        )
        record = self._record(token, claims, presented, rfc3339(self.clock.now()))
        return ResolvedSession(record, identity, pending, claims)

    @staticmethod
    def _record(token: str, claims: dict, presented: Presented, now: str) -> dict:
        """The API session record an access token stands for (never stored)."""
        issued = rfc3339(datetime.fromtimestamp(claims["iat"], timezone.utc))
        return {
            "last_activity_at": now,
            "id": claims["z_asid"],
            "token": token,
            "identity_id": claims["sub"],
            "created_at": issued,
            "updated_at": issued,
            "tags": {},
            "authenticator_id": claims.get("z_authid") or "",
            "config_types": claims.get("z_ct") or [],
            "ip_address": presented.remote_address,
            "is_mfa_required": False,
            "is_mfa_complete": "totp" in (claims.get("amr") or []),
            "is_cert_extendable": bool(claims.get("z_ice")),
            "is_cert_extend_requested": bool(claims.get("z_cer")),
            "is_cert_key_roll_requested": bool(claims.get("z_ckrr")),
            "improper_client_cert_chain": bool(claims.get("z_iccc")),
            "is_oidc": True,
        }

    def end(self, resolved: ResolvedSession, *, context: ChangeContext | None = None) -> None:
        """Log out: revoke the session (``z_asid``) and drop its sessions."""
        self.revocations.revoke(resolved.session["id"], "API_SESSION", context=context)
        with self.store.lock, self.store.transaction(context):
            self.sessions.delete_for_api_session(resolved.session)
