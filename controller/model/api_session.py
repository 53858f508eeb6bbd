"""API sessions: the opaque ``zt-session`` token, its expiry and its flags."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Callable

from controller import errors
from controller.auth.request import Pending
from controller.clock import parse_rfc3339, rfc3339
from controller.entities import ENTITIES
from controller.model.base import Core, EntityManager, scalar
from controller.model.identity import IdentityManager
from controller.store.change_context import ChangeContext
from controller.store.indexes import DueIndex, MultiIndex, UniqueIndex
from controller.store.query import Field, dt_key

#: a zt-session token that names no live session
INVALID_TOKEN = errors.Challenge(errors.Realm.ZT_SESSION, errors.Reason.INVALID)
#: how often a session's activity reaches the store (the real controller flushes every 90 s)
ACTIVITY_FLUSH = timedelta(seconds=90)


def _info(value) -> dict | None:
    """A legacy login's ``sdkInfo``/``envInfo``: any object (an empty one clears what is stored), else not sent."""
    return value if isinstance(value, dict) else None


class ApiSessionManager(EntityManager):
    declaration = ENTITIES["api_sessions"]
    unique_names = False
    filter_fields = (
        scalar("token", "string"),
        Field("identity", "string", lambda r: r.get("identity_id")),
        Field("authenticator", "string", lambda r: r.get("authenticator_id")),
        scalar("ipAddress", "string"),
        scalar("lastActivityAt", "datetime"),
        Field("mfaComplete", "bool", lambda r: bool(r.get("is_mfa_complete"))),
        Field("mfaRequired", "bool", lambda r: bool(r.get("is_mfa_required"))),
    )
    link_names = ("sessions",)

    def __init__(
        self,
        core: Core,
        *,
        identities: IdentityManager,
        timeout_seconds: int,
        resolve_config_types: Callable[[list[str]], list[str]],
        resolve_token: Callable[..., object],
        pending_factors: Callable[..., Pending],
        revoke_identity_tokens: Callable[[str], None],
    ):
        """The last three reach authentication services built after this manager (they need it)."""
        super().__init__(core)
        self.identities, self.resolve_config_types = identities, resolve_config_types
        self.timeout = timedelta(seconds=timeout_seconds)
        self.resolve_token, self.pending_factors = resolve_token, pending_factors
        self.revoke_identity_tokens = revoke_identity_tokens
        self.by_token = UniqueIndex(self.store, self.table, lambda r: r.get("token"))
        self.by_identity = MultiIndex(self.store, self.table, lambda r: r.get("identity_id"))
        #: sessions by stored last activity, so the sweep costs what expires, not what exists
        self.by_activity = DueIndex(self.store, self.table, lambda r: dt_key(r.get("last_activity_at")))
        #: session id -> last activity (in memory; flushed to the store every 90 s)
        self._activity: dict[str, datetime] = {}

    # -- lifecycle ----------------------------------------------------------
    def open(
        self,
        identity: dict,
        authenticator_id: str,
        ip: str,
        *,
        config_types=None,
        sdk_info=None,
        env_info=None,
        context: ChangeContext | None = None,
        **flags,
    ) -> dict:
        """Create the API session of a successful primary authentication.

        ``config_types``, ``sdk_info`` and ``env_info`` are the client's, as it sent them.
        """
        now = self._now()
        record = {
            "id": self.ids.cuid(),
            "token": self.ids.uuid(),
            "created_at": now,
            "updated_at": now,
            "tags": {},
            "identity_id": identity["id"],
            "authenticator_id": authenticator_id,
            "ip_address": ip,
            "config_types": self.resolve_config_types(config_types or []),
            "last_activity_at": now,
            "is_mfa_required": False,
            "is_mfa_complete": False,
            **flags,
        }
        with self.store.lock, self.store.transaction(context):
            self.store.insert(self.table, record["id"], record)
            self.identities.save_info(identity["id"], sdk_info=_info(sdk_info), env_info=_info(env_info))
        return record

    def close(self, session_id: str, *, context: ChangeContext | None = None) -> None:
        with self.store.lock, self.store.transaction(context):
            record = self.find(session_id)
            if record is not None:
                self.cascades.run(self.table, record)
                self.store.delete(self.table, session_id)
                self._activity.pop(session_id, None)

    def delete(self, entity_id: str, *, context: ChangeContext | None = None) -> None:
        self.get(entity_id)
        self.close(entity_id, context=context)

    def delete_for_identity(self, identity_id: str) -> None:
        """End every API session of the identity: the stored ones, and its OIDC tokens issued so far."""
        for session_id in list(self.by_identity.get(identity_id)):
            self.close(session_id)
        self.revoke_identity_tokens(identity_id)

    def has_session(self, identity_id: str) -> bool:
        return bool(self.by_identity.get(identity_id))

    def last_activity(self, record: dict) -> datetime:
        cached = self._activity.get(record["id"])
        stored = parse_rfc3339(record["last_activity_at"])
        return max(cached, stored) if cached else stored

    def is_expired(self, record: dict, now: datetime | None = None) -> bool:
        return self.last_activity(record) + self.timeout <= (now or self.clock.now())

    def sweep(self) -> int:
        """Delete every session idle past the timeout; return how many went."""
        now = self.clock.now()
        expired = []
        with self.store.lock:
            for session_id in self.by_activity.due(dt_key(now - self.timeout)):
                record = self.find(session_id)
                if record is None:
                    continue
                if self.is_expired(record, now):
                    expired.append(session_id)
                else:  # active since its last flush: look again when the cached activity expires
                    self.by_activity.push(dt_key(self.last_activity(record)), session_id)
        for session_id in expired:
            self.close(session_id)
        return len(expired)

    # -- resolving a zt-session token ---------------------------------------------
    invalid_token = INVALID_TOKEN

    def resolve(self, token: str) -> dict:
        """The live session of ``token`` (activity marked); ``Unauthorized`` when unknown or expired."""
        session_id = self.by_token.get(token)
        record = self.find(session_id) if session_id else None
        if record is None:
            raise errors.Unauthorized(challenges=(INVALID_TOKEN,))
        now = self.clock.now()
        if self.is_expired(record, now):
            self.close(record["id"])
            raise errors.Unauthorized(challenges=(INVALID_TOKEN,))
        self._mark_activity(record, now)
        return self.find(record["id"]) or record

    def _mark_activity(self, record: dict, now: datetime) -> None:
        self._activity[record["id"]] = now
        if now - parse_rfc3339(record["last_activity_at"]) >= ACTIVITY_FLUSH:
            with self.store.lock:
                if self.find(record["id"]) is not None:
                    try:
                        self.store.put(self.table, record["id"], {**record, "last_activity_at": rfc3339(now)})
                    except errors.Unavailable:
                        pass  # NOTE: reads go on while the store cannot write; the activity stays cached

    def for_token(self, token: str, *, peer_fingerprint: str | None = None) -> tuple[dict, dict]:
        """``(API session, identity)`` of a presented token (zt-session or OIDC access JWT).

        The router's hello calls this; it is :meth:`SessionTokens.resolve_token`, the one
        lookup HTTP dispatch uses too. Raises ``Unauthorized`` like it.
        """
        resolved = self.resolve_token(token, peer_fingerprint=peer_fingerprint)
        return resolved.session, resolved.identity

    # -- second factors -------------------------------------------------------
    def pending(self, session: dict, identity: dict, bearer_tokens=()) -> Pending:
        """Secondary factors still owed on ``session`` (``bearer_tokens`` of the request at hand)."""
        return self.pending_factors(
            identity,
            totp_required=bool(session.get("is_mfa_required")),
            totp_done=bool(session.get("is_mfa_complete")),
            bearer_tokens=bearer_tokens,
        )
