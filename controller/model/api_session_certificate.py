"""Ephemeral certificates of an API session (12 hours, ``CN=<identity id>``), from a CSR.

They live and die with their API session: a cascade on ``api_sessions`` removes
them, and every read is scoped to the caller's own session (another session's
certificate is a 404, like an unknown id).
"""

from __future__ import annotations

from controller.clock import rfc3339
from controller.entities import ENTITIES
from controller.errors import NotFound
from controller.model.api_session import ApiSessionManager
from controller.model.base import Core, EntityManager, scalar
from controller.pki.ca import ControllerPKI
from controller.pki.certs import fingerprint
from controller.store.change_context import ChangeContext
from controller.store.indexes import MultiIndex
from controller.store.query import Field


class ApiSessionCertificateManager(EntityManager):
    declaration = ENTITIES["api_session_certificates"]
    unique_names = False
    filter_fields = (
        scalar("subject", "string"),
        scalar("fingerprint", "string"),
        scalar("validFrom", "datetime"),
        scalar("validTo", "datetime"),
        Field("apiSession", "string", lambda r: r.get("api_session_id")),
    )

    def __init__(self, core: Core, *, api_sessions: ApiSessionManager, pki: ControllerPKI):
        super().__init__(core)
        self.api_sessions, self.pki = api_sessions, pki
        self.by_session = MultiIndex(self.store, self.table, lambda r: r.get("api_session_id"))

    def create_for(self, session: dict, csr_pem: str, *, context: ChangeContext | None = None) -> dict:
        """Sign ``csr_pem`` for ``session``; return the stored record."""
        cert_id = self.ids.short()
        cert = self.pki.sign_api_session_csr(csr_pem, session["identity_id"], session["id"], cert_id)
        now = self._now()
        record = {
            "id": cert_id,
            "created_at": now,
            "updated_at": now,
            "tags": {},
            "api_session_id": session["id"],
            "identity_id": session["identity_id"],
            "subject": cert.subject.rfc4514_string(),
            "fingerprint": fingerprint(cert),
            "valid_from": rfc3339(cert.not_valid_before_utc),
            "valid_to": rfc3339(cert.not_valid_after_utc),
            "certificate": self.pki.chain_pem(cert),
        }
        with self.store.lock, self.store.transaction(context):
            if self.api_sessions.find(session["id"]) is None:
                raise NotFound("apiSession", session["id"])
            self.store.insert(self.table, cert_id, record)
        return record

    def of_session(self, session_id: str) -> list[dict]:
        return sorted((r for r in (self.find(i) for i in self.by_session.get(session_id)) if r), key=lambda r: r["id"])

    def get_own(self, session_id: str, cert_id: str) -> dict:
        record = self.find(cert_id)
        if record is None or record.get("api_session_id") != session_id:
            raise NotFound(self.label, cert_id)
        return record

    def delete_own(self, session_id: str, cert_id: str, *, context: ChangeContext | None = None) -> None:
        with self.store.lock, self.store.transaction(context):
            self.get_own(session_id, cert_id)
            self.store.delete(self.table, cert_id)
