"""The interactive part of an OIDC login: authorize, primary login, TOTP, callback.

``authorize`` validates the client, redirect URI, scopes and PKCE challenge and
opens an auth request; a ``login`` runs the same primary authentication as the
legacy ``/authenticate`` (through ``Authenticator.verify``) and decides the
second factors with the same rules; ``callback`` hands out the code once every
factor is done.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from urllib.parse import urlencode

from controller import errors
from controller.auth.primary import LOGIN_METHODS, LOGIN_PAGES
from controller.auth.request import AuthRequest, Pending
from controller.oidc.requests import AuthRequests, OidcAuthRequest
from controller.oidc.tokens import CLIENTS, SCOPES
from controller.pki.certs import fingerprint
from controller.store.change_context import ChangeContext

#: the real controller's default redirect URIs (globs; ``*`` is one port)
REDIRECTS = (
    re.compile(r"^openziti://auth/callback$"),
    re.compile(r"^https?://(127\.0\.0\.1|localhost):[^/]*/auth/callback$"),
)
MAX_CODE, MAX_ID = 13, 40
# NOTE(oidc): the real controller spells this code with spaces, so it stays out of the
# upper-snake catalogue; a BadRequest, so 400.
INVALID_TOTP_CODE = "INVALID TOTP CODE"


class OAuthError(Exception):
    """An OAuth error reply: ``{"error", "error_description"}`` with ``status``."""

    def __init__(self, error: str, description: str, status: int = 400):
        super().__init__(description)
        self.error, self.description, self.status = error, description, status


def invalid_totp() -> errors.BadRequest:
    return errors.BadRequest(INVALID_TOTP_CODE, "an invalid TOTP code was supplied")


@dataclass
class LoginOutcome:
    """After a login step: done (go to the callback) or second factors pending."""

    request: OidcAuthRequest
    #: the second factors still owed (the API renders them as ``authQueries``)
    pending: Pending = field(default_factory=Pending)
    #: the identity has a verified TOTP enrollment (told only while TOTP is pending)
    totp_enrolled: bool = False

    @property
    def complete(self) -> bool:
        return not self.pending.any

    @property
    def totp_pending(self) -> bool:
        return self.pending.totp


class OidcFlow:
    """Authorize, login steps and the callback; auth requests live in ``requests``."""

    def __init__(
        self,
        requests: AuthRequests,
        *,
        auth,
        identities,
        mfas,
        factors,
        events,
        clock,
        ids,
        resolve_config_types: Callable[[list[str]], list[str]],
    ):
        self.requests, self.auth, self.factors, self.events = requests, auth, factors, events
        self.identities, self.mfas, self.clock, self.ids = identities, mfas, clock, ids
        #: config type names or ids -> ids: a callable, as that is all the flow needs of the config types
        self.resolve_config_types = resolve_config_types

    # -- authorize ----------------------------------------------------------
    def authorize(
        self, params: dict, *, issuer: str, peer_certs=(), remote_address: str = ""
    ) -> tuple[OidcAuthRequest, str]:
        """Open an auth request; returns it and the login path to redirect to."""
        client_id, redirect_uri = params.get("client_id"), params.get("redirect_uri")
        if client_id not in CLIENTS:
            raise OAuthError("invalid_client", "client not found")
        if not redirect_uri or not any(p.match(redirect_uri) for p in REDIRECTS):
            raise OAuthError("invalid_request", "The requested redirect_uri is missing in the client configuration.")
        if params.get("response_type") != "code":
            raise OAuthError(
                "unsupported_response_type", "The requested response type is missing in the client configuration."
            )
        scopes = [scope for scope in (params.get("scope") or "").split() if scope in SCOPES]
        if not scopes:
            raise OAuthError(
                "invalid_request", "The scope of your request is missing. Please ensure some scopes are requested."
            )
        if not params.get("code_challenge") or params.get("code_challenge_method") != "S256":
            raise OAuthError("invalid_request", "code_challenge with code_challenge_method S256 is required")
        if params.get("prompt") == "none":
            raise OAuthError("login_required", "prompt none is not supported: a login is required")
        request = self.requests.add(
            OidcAuthRequest(
                id=self.ids.uuid(),
                client_id=client_id,
                redirect_uri=redirect_uri,
                scopes=scopes,
                state=params.get("state") or "",
                nonce=params.get("nonce") or "",
                code_challenge=params["code_challenge"],
                api_session_id=self.ids.uuid(),
                created_at=self.clock.now(),
                peer_certs=tuple(peer_certs),
                remote_address=remote_address,
                issuer=issuer,
            )
        )
        method = params.get("method") or ("cert" if peer_certs else "username")
        page = LOGIN_PAGES.get(method, method if method in LOGIN_METHODS else "username")
        return request, f"/oidc/login/{page}?authRequestID={request.id}"

    # -- primary login --------------------------------------------------------
    def login(self, request_id, auth: AuthRequest) -> LoginOutcome:
        """Primary credentials, checked by the same authenticator as ``/authenticate``."""
        request = self.requests.get(request_id)
        method = LOGIN_METHODS[auth.method]
        proof = self.auth.verify(
            replace(auth, method=method, remote_address=auth.remote_address or request.remote_address)
        )
        identity = proof.identity
        request.identity_id, request.authenticator_id = identity["id"], proof.authenticator_id
        request.amr, request.flags = [method], dict(proof.flags)
        request.auth_time = int(self.clock.now().timestamp())
        request.config_types = self.resolve_config_types(_names(auth.config_types))
        request.sdk_info, request.env_info = _dict(auth.sdk_info), _dict(auth.env_info)
        request.info_saved = False
        csr = auth.csr_pem
        request.csr_pem = csr if isinstance(csr, str) and csr.strip() else None
        request.totp_required = self.factors.mfa_enabled(identity["id"])
        policy = self.identities.auth_policy_of(identity)
        if method == "cert" and auth.peer_certs:
            request.cert_fingerprint = fingerprint(auth.peer_certs[0])
            cert_policy = policy.get("primary", {}).get("cert", {})
            request.allow_expired_certs = bool(cert_policy.get("allow_expired_certs", True))
        self.events.authentication(
            True,
            f"oidc-{method}",
            identity_id=identity["id"],
            authenticator_id=proof.authenticator_id,
            api_session_id=request.api_session_id,
            remote_address=auth.remote_address,
        )
        return self._outcome(request, auth.bearer_tokens, auth.context, identity=identity, policy=policy)

    # -- TOTP -----------------------------------------------------------------
    def totp(self, request_id, code, *, context: ChangeContext | None = None) -> LoginOutcome:
        """A TOTP or recovery code as the second factor; 400 ``INVALID TOTP CODE`` when wrong."""
        request = self._authenticated(request_id)
        code = code.strip() if isinstance(code, str) else ""
        if not code or len(code) > MAX_CODE:
            raise invalid_totp()
        try:
            self.mfas.spend_code(request.identity_id, code, verified_only=True, context=context)
        except errors.BadRequest:
            raise invalid_totp() from None
        return self._add_totp(request, context)

    def totp_enroll(self, request_id, *, context: ChangeContext | None = None) -> dict:
        """Start TOTP enrollment inside the flow (409 ``MFA_EXISTS`` when one exists); the MFA record."""
        request = self._authenticated(request_id)
        identity = self.identities.get(request.identity_id)
        return self.mfas.enroll(identity, context=context)

    def totp_enroll_discard(self, request_id, code=None, *, context: ChangeContext | None = None) -> None:
        """Drop an enrollment: an unverified one freely, a verified one with a valid code."""
        request = self._authenticated(request_id)
        self.mfas.remove_own(request.identity_id, code if isinstance(code, str) else None, context=context)

    def totp_enroll_verify(self, request_id, code, *, context: ChangeContext | None = None) -> LoginOutcome:
        """Finish the enrollment; it counts as the TOTP factor."""
        request = self._authenticated(request_id)
        try:
            self.mfas.verify(request.identity_id, code if isinstance(code, str) else "", None, context=context)
        except errors.BadRequest:
            raise invalid_totp() from None
        return self._add_totp(request, context)

    def pending_factors(self, request_id, *, context: ChangeContext | None = None) -> LoginOutcome:
        """What an authenticated login still owes (``/oidc/login/auth-queries``)."""
        return self._outcome(self._authenticated(request_id), (), context)

    # -- callback -------------------------------------------------------------
    def callback(self, request_id, *, context: ChangeContext | None = None) -> str:
        """Where the callback redirects: the redirect URI with ``code`` (first) and ``state``."""
        request = self.requests.find(request_id)
        if request is None:
            raise OAuthError("invalid_request", "auth request not found")
        if not request.authenticated or not self._outcome(request, (), context).complete:
            query = {
                "error": "interaction_required",
                "error_description": "not all authentication factors are complete",
            }
        else:
            query = {"code": self.requests.issue_code(request)}
        if request.state:
            query["state"] = request.state
        separator = "&" if "?" in request.redirect_uri else "?"
        return request.redirect_uri + separator + urlencode(sorted(query.items()))

    def callback_url(self, request: OidcAuthRequest) -> str:
        return f"{request.issuer}/authorize/callback?id={request.id}"

    # -- helpers --------------------------------------------------------------
    def _authenticated(self, request_id) -> OidcAuthRequest:
        request = self.requests.get(request_id)
        if not request.authenticated:
            raise errors.Unauthorized()
        return request

    def _add_totp(self, request: OidcAuthRequest, context: ChangeContext | None) -> LoginOutcome:
        if "totp" not in request.amr:
            request.amr.append("totp")
        return self._outcome(request, (), context)

    def _outcome(
        self,
        request: OidcAuthRequest,
        bearer_tokens,
        context: ChangeContext | None = None,
        identity: dict | None = None,
        policy: dict | None = None,
    ) -> LoginOutcome:
        """What the request still owes; a valid secondary ext-jwt bearer is remembered in ``amr``.

        ``identity`` and ``policy``: the ones the primary login just read, so they are not looked up again (the
        identity's auth policy is otherwise read once here, for both second factors).
        """
        identity = identity or self.identities.find(request.identity_id)
        if identity is None:
            raise errors.InvalidAuth()
        policy = self.identities.auth_policy_of(identity) if policy is None else policy
        pending = self.factors.pending(
            identity,
            totp_required=request.totp_required,
            totp_done="totp" in request.amr,
            bearer_tokens=bearer_tokens,
            policy=policy,
        )
        signer = (policy.get("secondary") or {}).get("require_ext_jwt_signer")
        if signer and f"ejs:{signer}" in request.amr:
            pending.ext_jwt = []
        elif signer and bearer_tokens and not pending.ext_jwt:
            request.amr.append(f"ejs:{signer}")
        if not pending.any:
            self._save_info(request, context)
        enrolled = pending.totp and self.factors.mfa_enabled(identity["id"])  # only a TOTP query tells it
        return LoginOutcome(request, pending, bool(enrolled))

    def _save_info(self, request: OidcAuthRequest, context: ChangeContext | None) -> None:
        """Once per login, when its factors are done (the callback that follows writes nothing); only what changed."""
        if request.info_saved:
            return
        self.identities.save_info(
            request.identity_id, sdk_info=request.sdk_info, env_info=request.env_info, context=context
        )
        request.info_saved = True


def _names(value) -> list[str]:
    if isinstance(value, str):
        return [part for part in value.split(",") if part]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _dict(value) -> dict | None:
    return value if isinstance(value, dict) and value else None
