"""Primary authentication: the authenticator that runs any method (``auth/primary.py`` lists them).

``Authenticator.verify`` picks the method an :class:`AuthRequest` names and lets
it find the identity (a :class:`Proof`); ``authenticate`` then opens the legacy
API session the same way for every method. The OIDC login endpoints call
``verify`` too, so both front doors share the same checks.
"""

from __future__ import annotations

from datetime import datetime

from controller import errors
from controller.auth.request import AuthRequest, AuthResult, Proof


class Authenticator:
    """Runs a method from the registry; ``authenticate`` also opens the API session."""

    def __init__(self, methods: list, *, factors, api_sessions, events):
        self.factors, self.api_sessions, self.events = factors, api_sessions, events
        self.methods = {method.name: method for method in methods}

    def register(self, method) -> None:
        self.methods[method.name] = method

    def verify(self, request: AuthRequest) -> Proof:
        """The primary factor only: who the request proves to be (failures are audited)."""
        method = self.methods.get(request.method)
        if method is None:
            raise errors.BadRequest(
                errors.INVALID_AUTH_METHOD,
                cause={
                    "field": "method",
                    "reason": f"method {request.method} is not supported",
                    "value": request.method,
                },
            )
        try:
            return method.authenticate(request)
        except errors.ControllerError as ex:
            self.events.authentication(False, request.method, remote_address=request.remote_address, reason=ex.code)
            raise

    def authenticate(self, request: AuthRequest) -> AuthResult:
        """Legacy login: verify, open the API session, report the factors it still owes."""
        proof = self.verify(request)
        flags = {"is_mfa_required": self.factors.mfa_enabled(proof.identity["id"]), **proof.flags}
        sessions = self.api_sessions
        record = sessions.open(
            proof.identity,
            proof.authenticator_id,
            request.remote_address,
            config_types=request.config_types,
            sdk_info=request.sdk_info,
            env_info=request.env_info,
            context=request.context,
            **flags,
        )
        self.events.authentication(
            True,
            request.method,
            identity_id=proof.identity["id"],
            authenticator_id=proof.authenticator_id,
            api_session_id=record["id"],
            remote_address=request.remote_address,
        )
        pending = sessions.pending(record, proof.identity, request.bearer_tokens)
        expires_at: datetime = sessions.last_activity(record) + sessions.timeout
        return AuthResult(
            record,
            proof.identity,
            proof.authenticator_id,
            pending,
            pending.challenge,
            expires_at,
            bool(record.get("is_cert_extend_requested") or record.get("is_cert_key_roll_requested")),
        )


__all__ = ["AuthRequest", "AuthResult", "Authenticator", "Proof"]
