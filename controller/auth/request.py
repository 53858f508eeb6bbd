"""What authentication takes and gives back, without HTTP.

An :class:`AuthRequest` carries everything a method may look at (the body
fields, the TLS peer chain, bearer tokens, the caller's address); a method
answers with a :class:`Proof` (who, by which authenticator); the authenticator
turns that into an :class:`AuthResult` (the API session and its pending
factors). The API layer and the OIDC endpoints build requests and render
results; enrollment has the same shape in ``EnrollRequest``/``EnrollResult``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from controller.errors import Challenge
from controller.store.change_context import ChangeContext

#: authenticate body keys, matched without regard to case like the real controller
KNOWN_KEYS = {
    "username": "username",
    "password": "password",
    "configtypes": "configTypes",
    "envinfo": "envInfo",
    "sdkinfo": "sdkInfo",
}


def fold_keys(body) -> dict:
    """The real controller ignores the case of authenticate body keys."""
    if not isinstance(body, dict):
        return {}
    return {KNOWN_KEYS.get(key.lower(), key): value for key, value in body.items()}


@dataclass(frozen=True)
class AuthRequest:
    """One primary authentication attempt."""

    method: str
    #: the authenticate body (``username``, ``password``, ``configTypes``, ``sdkInfo``, ``envInfo``)
    body: dict = field(default_factory=dict)
    #: the TLS peer chain, leaf first (never from a header)
    peer_certs: tuple = ()
    #: ``Authorization: Bearer`` values (ext-jwt primary and secondary)
    bearer_tokens: tuple[str, ...] = ()
    remote_address: str = ""
    #: the source of the writes the attempt makes (API session, identity environment, lockout)
    context: ChangeContext | None = None

    @classmethod
    def of(cls, method: str, body=None, **kwargs) -> "AuthRequest":
        kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()}
        return cls(method, fold_keys(body or {}), **kwargs)


@dataclass
class Proof:
    """What a method established: the identity and how."""

    identity: dict
    authenticator_id: str
    flags: dict = field(default_factory=dict)


@dataclass
class Pending:
    """Second factors a session still owes."""

    #: TOTP (or a recovery code) is required and not given yet
    totp: bool = False
    #: EXT-JWT auth queries of a required secondary signer
    ext_jwt: list[dict] = field(default_factory=list)
    #: why the secondary signer's token is missing (the API answers it in ``WWW-Authenticate``), if it is
    challenge: Challenge | None = None

    @property
    def any(self) -> bool:
        return self.totp or bool(self.ext_jwt)


@dataclass
class AuthResult:
    """A legacy authentication's outcome: the API session opened and what it still owes."""

    api_session: dict
    identity: dict
    authenticator_id: str
    auth_queries: list[dict]
    challenge: Challenge | None
    expires_at: datetime
    #: an admin asked this client to extend (or roll the key of) its certificate
    extend_requested: bool = False


@dataclass(frozen=True)
class Collaborators:
    """Everything a primary method may use; each method's ``build`` takes the few it needs."""

    store: Any
    pki: Any
    clock: Any
    cas: Any
    authenticators: Any
    identities: Any
    external_jwt_signers: Any
    ext_jwt: Any
