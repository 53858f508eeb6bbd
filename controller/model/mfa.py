"""TOTP MFA enrollments: one per identity, in table ``mfas`` keyed by the identity id.

States (the spec's MFA rows): none -> enrolled, not verified (enroll) ->
verified (verify with a TOTP code) -> none (delete with a code, or an admin
removal). A verified enrollment makes every later login partial
(``isMfaRequired``) until ``POST /authenticate/mfa`` gets a TOTP or a
recovery code. The record keeps its own ``mfa_id`` for the wire ``id``.
"""

from __future__ import annotations

from controller import errors
from controller.auth import totp
from controller.entities import ENTITIES
from controller.model.api_session import ApiSessionManager
from controller.model.base import Core, EntityManager
from controller.model.identity import IdentityManager
from controller.store.change_context import ChangeContext


def invalid_token() -> errors.BadRequest:
    return errors.BadRequest(errors.MFA_INVALID_TOKEN)


class MfaManager(EntityManager):
    declaration = ENTITIES["mfas"]
    unique_names = False

    def __init__(
        self, core: Core, *, identities: IdentityManager, api_sessions: ApiSessionManager, events, totp_issuer: str
    ):
        super().__init__(core)
        self.identities, self.api_sessions, self.events = identities, api_sessions, events
        self.totp_issuer = totp_issuer

    # -- reads ----------------------------------------------------------------
    def of(self, identity_id: str) -> dict | None:
        return self.find(identity_id)

    def require(self, identity_id: str, *, verified: bool | None = None) -> dict:
        """The identity's enrollment; 404 when none (or not in the wanted verified state)."""
        record = self.of(identity_id)
        if record is None or (verified is not None and bool(record.get("is_verified")) != verified):
            raise errors.NotFound(self.label, identity_id)
        return record

    def check_code(self, record: dict, code: str | None, *, allow_recovery: bool) -> int | None:
        """Raise MFA_INVALID_TOKEN unless ``code`` is valid; a recovery code's index, else None."""
        code = (code or "").strip()
        if totp.verify_totp(record["secret"], code, self.clock.now()):
            return None
        if allow_recovery:
            index = totp.match_recovery_code(record.get("recovery_codes") or [], code)
            if index is not None:
                return index
        raise invalid_token()

    def check_totp(self, identity_id: str, code: str | None) -> None:
        """A TOTP code (never a recovery code) of the identity's enrollment: 400 when empty or wrong, 409 when none."""
        if not (code or "").strip():
            raise invalid_token()
        record = self.of(identity_id)
        if record is None:
            raise errors.Conflict(errors.MFA_NOT_ENROLLED, "the identity has no MFA enrollment")
        self.check_code(record, code, allow_recovery=False)

    # -- transitions ------------------------------------------------------------
    def enroll(self, identity: dict, *, context: ChangeContext | None = None) -> dict:
        now = self._now()
        record = {
            "id": identity["id"],
            "mfa_id": self.ids.short(),
            "identity_id": identity["id"],
            "created_at": now,
            "updated_at": now,
            "tags": {},
            "is_verified": False,
            "secret": totp.new_secret(),
            "recovery_codes": totp.new_recovery_codes(),
        }
        with self.store.lock, self.store.transaction(context):
            if self.of(identity["id"]) is not None:
                raise errors.Conflict(errors.MFA_EXISTS, "an MFA enrollment already exists; delete it first")
            self.store.insert(self.table, record["id"], record)
        self.events.mfa("enrolled", identity["id"], mfa_id=record["mfa_id"])
        return record

    def verify(
        self, identity_id: str, code: str, session: dict | None, *, context: ChangeContext | None = None
    ) -> None:
        """Complete enrollment with a TOTP code (recovery codes are refused)."""
        with self.store.lock, self.store.transaction(context):
            record = self.require(identity_id, verified=False)
            try:
                self.check_code(record, code, allow_recovery=False)
            except errors.BadRequest:
                self.events.mfa("verifyFailed", identity_id)
                raise
            self.touch(identity_id, is_verified=True)
            if session is not None:
                # NOTE: like the real controller, verifying on a session completes its MFA too.
                self.api_sessions.touch(session["id"], is_mfa_required=True, is_mfa_complete=True)
        self.events.mfa("verified", identity_id, mfa_id=record["mfa_id"])

    def authenticate(self, session: dict, code: str, *, context: ChangeContext | None = None) -> None:
        """``POST /authenticate/mfa``: a TOTP or a (then spent) recovery code completes the session."""
        with self.store.lock, self.store.transaction(context):
            if self.of(session["identity_id"]) is None:
                raise errors.Conflict(errors.MFA_NOT_ENROLLED, "the identity has no MFA enrollment")
            try:
                used_recovery = self.spend_code(session["identity_id"], code)
            except errors.BadRequest:
                self.events.mfa("authenticationFailed", session["identity_id"], api_session_id=session["id"])
                raise
            self.api_sessions.touch(session["id"], is_mfa_complete=True)
        self.events.mfa(
            "authenticated", session["identity_id"], api_session_id=session["id"], used_recovery_code=used_recovery
        )

    def spend_code(
        self, identity_id: str, code: str, *, verified_only: bool = False, context: ChangeContext | None = None
    ) -> bool:
        """Check a login's TOTP or recovery code (a recovery code is spent); True for a recovery code.

        Raises MFA_INVALID_TOKEN for a wrong code or a missing (or, if asked, unverified) enrollment.
        """
        with self.store.lock, self.store.transaction(context):
            record = self.of(identity_id)
            if record is None or (verified_only and not record.get("is_verified")):
                raise invalid_token()
            index = self.check_code(record, code, allow_recovery=True)
            if index is not None:
                codes = list(record["recovery_codes"])
                del codes[index]
                self.touch(record["id"], recovery_codes=codes)
        return index is not None

    def remove_own(self, identity_id: str, code: str | None, *, context: ChangeContext | None = None) -> None:
        """``DELETE /current-identity/mfa``: a verified enrollment needs a TOTP or recovery code."""
        with self.store.lock, self.store.transaction(context):
            record = self.require(identity_id)
            if record.get("is_verified"):
                self.check_code(record, code, allow_recovery=True)
            self.store.delete(self.table, identity_id)
        self.events.mfa("removed", identity_id, by="self")

    def remove_by_admin(self, identity_id: str, *, context: ChangeContext | None = None) -> None:
        self.identities.get(identity_id)
        with self.store.lock, self.store.transaction(context):
            self.require(identity_id)
            self.store.delete(self.table, identity_id)
        self.events.mfa("removed", identity_id, by="admin")

    def recovery_codes(self, identity_id: str, code: str | None) -> dict:
        """The recovery codes of a verified enrollment, shown for a valid TOTP code only."""
        record = self.require(identity_id, verified=True)
        self.check_code(record, code, allow_recovery=False)
        return record

    def regenerate(self, identity_id: str, code: str | None, *, context: ChangeContext | None = None) -> None:
        with self.store.lock, self.store.transaction(context):
            record = self.require(identity_id, verified=True)
            self.check_code(record, code, allow_recovery=True)
            self.touch(identity_id, recovery_codes=totp.new_recovery_codes())
        self.events.mfa("recoveryCodesRegenerated", identity_id)

    # -- the authenticator app's enrollment ----------------------------------
    def provisioning_url(self, record: dict) -> str:
        identity = self.identities.find(record["identity_id"]) or {}
        return totp.provisioning_url(self.totp_issuer, identity.get("name") or record["identity_id"], record["secret"])

    def qr_png(self, record: dict) -> bytes:
        return totp.qr_png(self.provisioning_url(record))
