"""What an SDK presents to a router: API sessions (hello, UpdateToken) and Dial/Bind sessions.

The latest token and certificate each API session presented are kept (``_presented``), so a dial re-checks the
API session as HTTP would; a router reports them again at every reconnect (``reconcile``).
"""

from __future__ import annotations

from controller.errors import ControllerError

INVALID_SESSION = "Invalid Session"


class Sessions:
    """Part of :class:`controller.router_link.RouterLink`: API sessions and sessions."""

    def hello(self, token: str, client_fingerprint: str) -> dict:
        try:
            session, identity = self.api_sessions.for_token(token, peer_fingerprint=client_fingerprint)
        except ControllerError:
            raise PermissionError("invalid api session") from None
        if self.api_sessions.pending(session, identity).any:
            raise PermissionError("api session has unanswered authentication queries")
        if client_fingerprint not in self._fingerprints(session, identity):
            raise PermissionError("client certificate does not belong to the api session")
        self._presented[session["id"]] = (token, client_fingerprint)
        return {
            "api_session_id": session["id"],
            "identity_id": identity["id"],
            "identity_name": identity.get("name") or "",
        }

    def _fingerprints(self, session: dict, identity: dict) -> set[str]:
        out = {r["fingerprint"] for r in self.authenticators.of_identity(identity["id"]) if r.get("fingerprint")}
        out.update(r["fingerprint"] for r in self.api_session_certificates.of_session(session["id"]))
        return out

    def session(self, caller, token: str, kind: str) -> dict:
        return self._session(caller, token, kind)[0]

    def _session(self, caller, token: str, kind: str) -> tuple[dict, dict]:
        """The grant for ``caller``'s Dial or Bind session ``token``, and the caller's identity record."""
        record = self.sessions.find(token)
        if record is None or record.get("token") != token or record["api_session_id"] != caller.api_session_id:
            raise PermissionError(INVALID_SESSION)
        token, fingerprint = self._presented.get(caller.api_session_id, ("", ""))
        try:
            api_session, identity = self.api_sessions.for_token(token, peer_fingerprint=fingerprint)
        except ControllerError:
            raise PermissionError(INVALID_SESSION) from None
        if api_session["id"] != caller.api_session_id or identity["id"] != caller.identity_id:
            raise PermissionError(INVALID_SESSION)
        if record["type"] != kind:
            raise PermissionError(
                "rejecting bind, invalid session type" if kind == "Bind" else "incorrect session type"
            )
        service = self.services.find(record["service_id"])
        if service is None:
            raise PermissionError("invalid service")
        if self.router_id not in self.engine.usable_edge_routers(caller.identity_id, service["id"]):
            raise PermissionError("invalid edge router for session")
        grant = {
            "session_id": record["id"],
            "service_id": service["id"],
            "service_name": service["name"],
            "encryption_required": bool(service.get("encryption_required")),
        }
        return grant, identity
