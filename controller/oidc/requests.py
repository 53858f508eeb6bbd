"""Auth requests: one OIDC login in progress, from ``/authorize`` to the code exchange.

They live only in memory, like the real controller's, and go after ten
minutes (measured on the controller clock). They are kept in creation order,
so a purge looks only at the expired ones; at most ``MAX_LIVE`` are kept (the
oldest goes first), so a flood of ``/authorize`` calls cannot grow memory
without bound.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from controller import errors

LIFETIME = timedelta(minutes=10)
MAX_LIVE = 100_000


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
    #: ``csrPem`` of the login body: signed into the session certificate at the code exchange
    csr_pem: str | None = None
    allow_expired_certs: bool = False
    code: str | None = None
    #: the SDK and environment info of this login are on the identity (written once, not again by the callback)
    info_saved: bool = False

    @property
    def authenticated(self) -> bool:
        return self.identity_id is not None


class AuthRequests:
    """The in-memory auth requests and their codes."""

    def __init__(self, clock):
        self.clock = clock
        self._lock = threading.Lock()
        #: id -> request, oldest first
        self._by_id: OrderedDict[str, OidcAuthRequest] = OrderedDict()
        self._by_code: dict[str, str] = {}

    def add(self, request: OidcAuthRequest) -> OidcAuthRequest:
        with self._lock:
            self._purge(self.clock.now() - LIFETIME)
            while len(self._by_id) >= MAX_LIVE:
                self._drop(next(iter(self._by_id.values())))
            self._by_id[request.id] = request
        return request

    def get(self, request_id) -> OidcAuthRequest:
        """The live auth request; 401 ``UNAUTHORIZED`` when unknown or expired (the real answer)."""
        with self._lock:
            found = self._live(self._by_id.get(request_id) if isinstance(request_id, str) else None)
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
            request_id = self._by_code.get(code) if isinstance(code, str) else None
            return self._live(self._by_id.get(request_id)) if request_id else None

    def remove(self, request: OidcAuthRequest) -> None:
        with self._lock:
            self._drop(request)

    def __len__(self) -> int:
        return len(self._by_id)

    def _live(self, request: OidcAuthRequest | None) -> OidcAuthRequest | None:
        """``request`` unless expired (then purged with every other expired one)."""
        cutoff = self.clock.now() - LIFETIME
        if request is not None and request.created_at <= cutoff:
            self._drop(request)
            request = None
        self._purge(cutoff)
        return request

    def _drop(self, request: OidcAuthRequest) -> None:
        self._by_id.pop(request.id, None)
        if request.code:
            self._by_code.pop(request.code, None)

    def _purge(self, cutoff: datetime) -> None:
        """Drop the requests at the old end created by ``cutoff`` (a clock set back may leave one further in: ``_live``)."""
        while self._by_id:
            oldest = next(iter(self._by_id.values()))
            if oldest.created_at > cutoff:
                return
            self._drop(oldest)
