"""One way to turn a presented token into an API session: legacy ``zt-session`` or OIDC access JWT.

:meth:`SessionTokens.resolve` is what the API dispatch calls for every
request that presents a token, and :meth:`SessionTokens.resolve_token` is the
same for a single token (an edge router's hello carries one). Both answer a
:class:`ResolvedSession` or raise ``Unauthorized`` with the challenges the API
answers in ``WWW-Authenticate``.

Selection (the real controller's): a ``zt-session`` value makes the request
legacy, and bearer tokens are then only second factors. Otherwise the first
bearer that looks like a controller access token (our ``kid``, ``z_t`` "a",
a ``z_asid``) is the session, the other bearers second factors.

Per-request external JWTs: with neither, an operation that asks for it
(``resolve(..., per_request=True)``) takes a bearer of an enabled external
JWT signer as the primary credential of that one request, when the identity
it names may log in by ext-jwt (:meth:`ExtJwtMethod.prove`). Nothing is
stored: the request stands on a session record built from the token, and
second factors are owed as on any session. When no bearer qualifies the
request is refused as if it carried no token at all.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timezone

import jwt

from controller import errors
from controller.auth.request import Pending
from controller.clock import rfc3339

#: no token at all: neither a zt-session nor an OIDC bearer
MISSING_TOKEN = (
    errors.Challenge(errors.Realm.ZT_SESSION, errors.Reason.MISSING),
    errors.Challenge(errors.Realm.OIDC, errors.Reason.MISSING),
)
#: a bearer that is not even a JWT (the real controller counts it as an invalid OIDC token)
MALFORMED_BEARER = (errors.Challenge(errors.Realm.OIDC, errors.Reason.INVALID),)


@dataclass(frozen=True)
class Presented:
    """The credentials one request or connection presents."""

    zt_session: str | None = None
    bearer_tokens: tuple[str, ...] = ()
    #: the TLS peer chain, leaf first (never from a header)
    peer_certs: tuple = ()
    remote_address: str = ""
    #: the TLS client certificate's SHA-1 fingerprint, when only that is known (an edge router's hello)
    peer_fingerprint: str | None = None


@dataclass
class ResolvedSession:
    """An authenticated API session as a request sees it."""

    #: the stored record (legacy) or one built from the token's claims (OIDC)
    session: dict
    identity: dict
    pending: Pending = field(default_factory=Pending)
    #: the verified claims of an OIDC access token, None for legacy sessions
    claims: dict | None = None

    @property
    def is_oidc(self) -> bool:
        return self.claims is not None

    @property
    def is_partial(self) -> bool:
        return self.pending.any


class SessionTokens:
    """Resolves presented tokens; the OIDC verifier is absent when OIDC is off."""

    def __init__(self, api_sessions, identities, oidc=None, *, ext_jwt=None, factors=None, clock=None):
        self.api_sessions = api_sessions
        self.identities = identities
        self.oidc = oidc
        #: ``ExtJwtMethod`` and ``SecondaryFactors``, for per-request external JWTs (absent: none accepted)
        self.ext_jwt, self.factors, self.clock = ext_jwt, factors, clock

    def resolve(self, presented: Presented, *, per_request: bool = False) -> ResolvedSession:
        """The API session ``presented`` proves; ``Unauthorized`` when none.

        ``per_request``: an external JWT may stand for a session on this request.
        """
        if presented.zt_session:
            return self._legacy(presented)
        if self.oidc is not None:
            for index, token in enumerate(presented.bearer_tokens):
                if self.oidc.is_access_token(token):
                    others = presented.bearer_tokens[:index] + presented.bearer_tokens[index + 1 :]
                    return self.oidc.resolve(token, presented, others)
        if per_request and self.ext_jwt is not None and presented.bearer_tokens:
            resolved = self._per_request(presented)
            if resolved is not None:
                return resolved
        if self.oidc is not None and any(not _is_jwt(token) for token in presented.bearer_tokens):
            raise errors.Unauthorized(challenges=MALFORMED_BEARER)
        raise errors.Unauthorized(challenges=MISSING_TOKEN)

    def _per_request(self, presented: Presented) -> ResolvedSession | None:
        """The request's own session when one of its bearers is an acceptable external JWT, else None."""
        try:
            bearer = self.ext_jwt.prove(presented.bearer_tokens)
        except errors.Unauthorized:
            return None
        identity = bearer.proof.identity
        others = tuple(token for token in presented.bearer_tokens if token != bearer.token)
        pending = self.factors.pending(
            identity, totp_required=self.factors.mfa_enabled(identity["id"]), totp_done=False, bearer_tokens=others
        )
        record = per_request_record(bearer, presented.remote_address, self.clock.now())
        return ResolvedSession(record, identity, pending)

    def resolve_token(
        self, token: str, *, peer_certs=(), peer_fingerprint: str | None = None, remote_address: str = ""
    ) -> ResolvedSession:
        """One token (a router hello's): a JWT is an OIDC access token, anything else a zt-session."""
        connection = {
            "peer_certs": tuple(peer_certs),
            "peer_fingerprint": peer_fingerprint,
            "remote_address": remote_address,
        }
        if self.oidc is not None and isinstance(token, str) and token.startswith("ey"):
            return self.resolve(Presented(bearer_tokens=(token,), **connection))
        return self.resolve(Presented(zt_session=token, **connection))

    def admin_presented(self, zt_session: str | None, bearer_tokens: tuple[str, ...] = ()) -> bool:
        """Whether the tokens name a live session of an enabled admin, without touching any record.

        The listener asks this before buffering a large body; the request is still authorized in full after.
        NOTE(surface2x): a per-request external JWT is not looked at here: checking it may fetch the signer's
        JWKS, which the listener's event loop must not wait for; such a request gets the ordinary body limit.
        """
        if zt_session:
            session = self.api_sessions.find(self.api_sessions.by_token.get(zt_session) or "")
            alive = session is not None and not self.api_sessions.is_expired(session)
            return alive and self._enabled_admin(session["identity_id"])
        if self.oidc is not None:
            for token in bearer_tokens:
                subject = self.oidc.admin_candidate(token)
                if subject is not None and self._enabled_admin(subject):
                    return True
        return False

    def _enabled_admin(self, identity_id: str) -> bool:
        identity = self.identities.find(identity_id)
        return bool(identity and identity.get("is_admin")) and not self.identities.is_disabled(identity)

    def presents_any(self, presented: Presented) -> bool:
        """True when the request carries something that could be a session token."""
        if presented.zt_session:
            return True
        return self.oidc is not None and any(self.oidc.is_access_token(t) for t in presented.bearer_tokens)

    def _legacy(self, presented: Presented) -> ResolvedSession:
        session = self.api_sessions.resolve(presented.zt_session)
        identity = self.identities.find(session["identity_id"])
        if identity is None:
            self.api_sessions.close(session["id"])
            raise errors.Unauthorized(challenges=(self.api_sessions.invalid_token,))
        if self.identities.is_disabled(identity):
            self.api_sessions.delete_for_identity(identity["id"])
            raise errors.Unauthorized()
        pending = self.api_sessions.pending(session, identity, presented.bearer_tokens)
        return ResolvedSession(session, identity, pending)


def _is_jwt(token: str) -> bool:
    try:
        jwt.get_unverified_header(token)
        jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return False
    return True


def per_request_record(bearer, remote_address: str, now: datetime) -> dict:
    """The API session record a per-request external JWT stands for (never stored).

    Its id is derived from the token, so the sessions (dials) a client creates
    with one token stay its own on the next request with the same token.
    """
    digest = hashlib.sha256(bearer.token.encode()).digest()[:9]
    iat = bearer.claims.get("iat")
    issued = datetime.fromtimestamp(iat, timezone.utc) if isinstance(iat, (int, float)) else now
    issued_at, now_at = rfc3339(issued), rfc3339(now)
    return {
        "id": "xj" + base64.urlsafe_b64encode(digest).decode().rstrip("="),
        "token": None,
        "identity_id": bearer.proof.identity["id"],
        "authenticator_id": bearer.proof.authenticator_id,
        "created_at": issued_at,
        "updated_at": issued_at,
        "last_activity_at": now_at,
        "tags": {},
        "config_types": [],
        "ip_address": remote_address,
        "is_mfa_required": False,
        "is_mfa_complete": False,
        "is_cert_extendable": False,
        "is_cert_extend_requested": False,
        "is_cert_key_roll_requested": False,
        "improper_client_cert_chain": False,
        "per_request": True,
    }
