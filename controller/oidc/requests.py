"""Auth requests: one OIDC login in progress, from ``/authorize`` to the code exchange.

They live only in memory, like the real controller's, and go after ten
minutes (measured on the controller clock, purged on each new request).
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from controller import errors

LIFETIME = timedelta(minutes=10)


@dataclass
class OidcAuthRequest:
    id: str
    client_id: str
    redirect_uri: str
    scopes: list[str]
    state: str
    nonce: str
    code_challenge: str
    #: ``z_asid``: the API session this login opens
    api_session_id: str
    created_at: datetime
    peer_certs: tuple = ()
    remote_address: str = ""
    issuer: str = ""
    #: set by the primary login
    identity_id: str | None = None
    authenticator_id: str = ""
    amr: list[str] = field(default_factory=list)
    flags: dict = field(default_factory=dict)
    config_types: list[str] = field(default_factory=list)
    sdk_info: dict | None = None
    env_info: dict | None = None
    auth_time: int = 0
    #: TOTP is owed: the identity has verified MFA or its policy requires it
    totp_required: bool = False
    #: fingerprint of the authenticating certificate (cert logins)
    cert_fingerprint: str | None = None
    allow_expired_certs: bool = False
    code: str | None = None

    @property
    def authenticated(self) -> bool:
        return self.identity_id is not None


class AuthRequests:
    """The in-memory auth requests and their codes."""

    def __init__(self, clock):
        self.clock = clock
        self._lock = threading.Lock()
        self._by_id: dict[str, OidcAuthRequest] = {}
        self._by_code: dict[str, str] = {}

    def add(self, request: OidcAuthRequest) -> OidcAuthRequest:
        with self._lock:
            self._purge()
            self._by_id[request.id] = request
        return request

    def get(self, request_id) -> OidcAuthRequest:
        """The live auth request; 401 ``UNAUTHORIZED`` when unknown or expired (the real answer)."""
        with self._lock:
            self._purge()
            found = self._by_id.get(request_id) if isinstance(request_id, str) else None
        if found is None:
            raise errors.Unauthorized()
        return found

    def find(self, request_id) -> OidcAuthRequest | None:
        try:
            return self.get(request_id)
        except errors.Unauthorized:
            return None

    def issue_code(self, request: OidcAuthRequest) -> str:
        """A new opaque, URL-safe code for a completed request (``&``-free: the C SDK needs that)."""
        with self._lock:
            if request.code:
                self._by_code.pop(request.code, None)
            request.code = secrets.token_urlsafe(32)
            self._by_code[request.code] = request.id
        return request.code

    def by_code(self, code) -> OidcAuthRequest | None:
        with self._lock:
            self._purge()
            request_id = self._by_code.get(code) if isinstance(code, str) else None
            return self._by_id.get(request_id) if request_id else None

    def remove(self, request: OidcAuthRequest) -> None:
        with self._lock:
            self._by_id.pop(request.id, None)
            if request.code:
                self._by_code.pop(request.code, None)

    def _purge(self) -> None:
        cutoff = self.clock.now() - LIFETIME
        for request_id in [rid for rid, r in self._by_id.items() if r.created_at <= cutoff]:
            request = self._by_id.pop(request_id)
            if request.code:
                self._by_code.pop(request.code, None)
