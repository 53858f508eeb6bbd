"""What authentication takes and gives back, without HTTP.

An :class:`AuthRequest` carries everything a method may look at (the body
fields, the TLS peer chain, bearer tokens, the caller's address); a method
answers with a :class:`Proof` (who, by which authenticator); the authenticator
turns that into an :class:`AuthResult` (the API session and its pending
factors). The API layer (``api/auth_wire.py``) builds requests from the wire body and
renders results; enrollment has the same shape in ``EnrollRequest``/``EnrollResult``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from controller.errors import Challenge
from controller.store.change_context import ChangeContext


@dataclass(frozen=True)
class AuthRequest:
    """One primary authentication attempt."""

    method: str
    #: the credentials as sent (``username``, ``password``); the method checks them
    body: dict = field(default_factory=dict)
    #: the TLS peer chain, leaf first (never from a header)
    peer_certs: tuple = ()
    #: ``Authorization: Bearer`` values (ext-jwt primary and secondary)
    bearer_tokens: tuple[str, ...] = ()
    remote_address: str = ""
    #: the source of the writes the attempt makes (API session, identity environment, lockout)
    context: ChangeContext | None = None
    #: the config types the client asks its session to carry, as sent
    config_types: object = None
    #: the client's SDK and environment details, as sent
    sdk_info: object = None
    env_info: object = None
    #: an OIDC login's certificate request (``csrPem``) for a session certificate, as sent
    csr_pem: object = None


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
    #: the required secondary ext-jwt signers whose token is missing (their records)
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
    #: the second factors the session still owes (the API renders them as ``authQueries``)
    pending: Pending
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
