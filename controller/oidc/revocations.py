"""Revocations as OIDC tokens see them: by ``jti``, by identity (tokens issued before) and by ``z_asid``.

The records are the ``revocations`` table's (``POST /revocations`` writes
them too); entries expire after the longest token lifetime.
"""

from __future__ import annotations

from datetime import timedelta

from controller.clock import parse_rfc3339, rfc3339
from controller.store.change_context import ChangeContext

TABLE = "revocations"


class TokenRevocations:
    """Reads and writes the revocations that end OIDC tokens."""

    def __init__(self, store, clock, lifetime: timedelta):
        self.store, self.clock, self.lifetime = store, clock, lifetime

    def revoke(self, entity_id: str, kind: str, *, context: ChangeContext | None = None) -> None:
        """Record a revocation of ``kind`` (JTI, IDENTITY, API_SESSION), refreshing an older one."""
        now = self.clock.now()
        stamp = rfc3339(now)
        with self.store.lock, self.store.transaction(context):
            old = self.store.get(TABLE, entity_id)
            if old is not None and old.get("created_at", "") >= stamp:
                return
            self.store.put(
                TABLE,
                entity_id,
                {
                    "id": entity_id,
                    "type": kind,
                    "created_at": stamp,
                    "updated_at": stamp,
                    "tags": (old or {}).get("tags") or {},
                    "expires_at": rfc3339(now + self.lifetime),
                },
            )

    def is_revoked(self, claims: dict) -> bool:
        """True when the token's jti, its session or (issued before the revocation) its identity is revoked."""
        if self._find(claims.get("jti"), "JTI") or self._find(claims.get("z_asid"), "API_SESSION"):
            return True
        record = self._find(claims.get("sub"), "IDENTITY")
        if record is None:
            return False
        revoked_at = int(parse_rfc3339(record["created_at"]).timestamp())
        return revoked_at >= int(claims.get("iat") or 0)

    def _find(self, entity_id, kind: str) -> dict | None:
        if not isinstance(entity_id, str) or not entity_id:
            return None
        record = self.store.get(TABLE, entity_id)
        return record if record is not None and record.get("type") == kind else None
