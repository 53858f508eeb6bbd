"""Revocations: ``JTI``, ``IDENTITY`` and ``API_SESSION`` entries that end tokens early.

OIDC tokens check every kind (``controller/oidc/revocations.py``); besides,
``IDENTITY`` ends every stored API session of the identity and ``API_SESSION``
ends a stored session at once (an OIDC session's ``z_asid`` has no record, so it
is accepted as is). Entries expire after the longest token lifetime (a day).
"""

from __future__ import annotations

from datetime import timedelta

from controller import errors
from controller.clock import rfc3339
from controller.entities import ENTITIES
from controller.model.api_session import ApiSessionManager
from controller.model.base import Attr, Core, EntityManager, scalar
from controller.model.identity import IdentityManager
from controller.model.session import SessionManager

TYPES = ("JTI", "IDENTITY", "API_SESSION")
LIFETIME = timedelta(hours=24)


class RevocationManager(EntityManager):
    declaration = ENTITIES["revocations"]
    unique_names = False
    attrs = (Attr("type", on_update=False),)
    filter_fields = (scalar("type", "string"), scalar("expiresAt", "datetime"))

    def __init__(
        self, core: Core, *, identities: IdentityManager, api_sessions: ApiSessionManager, sessions: SessionManager
    ):
        super().__init__(core)
        self.identities, self.api_sessions, self.sessions = identities, api_sessions, sessions

    def new_id(self, body: dict) -> str:
        return body["id"]

    def prepare(self, record: dict, old: dict | None, body: dict) -> None:
        if self.find(record["id"]) is not None:
            raise errors.FieldError("id", f"a revocation with id {record['id']} already exists", record["id"])
        if record["type"] == "IDENTITY":
            self.identities.get(record["id"])
        record["expires_at"] = rfc3339(self.clock.now() + LIFETIME)

    def after_create(self, record: dict, body: dict) -> None:
        if record["type"] == "IDENTITY":
            self.api_sessions.delete_for_identity(record["id"])
        elif record["type"] == "API_SESSION":
            self.api_sessions.close(record["id"])
            self.sessions.delete_for_api_session(record)
