"""The token endpoint's grants: authorization code, refresh token (rotated) and RFC 8693 exchange.

Each grant checks what the real controller checks, in its order, and answers
OAuth errors (``invalid_grant``, ``invalid_request``...) as :class:`OAuthError`.
Unlike the real 2.0.3, a refresh or an exchange also refuses a disabled,
deleted or revoked identity.
"""

from __future__ import annotations

import hmac
import uuid
from datetime import timedelta

from controller import errors
from controller.oidc.flow import OAuthError
from controller.oidc.requests import AuthRequests, OidcAuthRequest
from controller.oidc.sessions import holds_bound_cert
from controller.oidc.tokens import (
    ACCESS,
    CLIENTS,
    CUSTOM,
    REFRESH,
    SCOPES,
    TokenRejected,
    TokenSigner,
    s256,
    session_claims,
)
from controller.pki.certs import fingerprint

#: a session certificate signed from a login's (or a refresh's) CSR lives a year, as the real one's
SESSION_CERT_LIFETIME = timedelta(days=365)
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
TYPE_PREFIX = "urn:ietf:params:oauth:token-type:"
ACCESS_TYPE, REFRESH_TYPE, ID_TYPE = (TYPE_PREFIX + name for name in ("access_token", "refresh_token", "id_token"))


class TokenGrants:
    """``POST /oidc/oauth/token``: one method per grant type."""

    def __init__(self, requests: AuthRequests, signer: TokenSigner, revocations, *, identities, clock, pki=None):
        self.requests, self.signer, self.revocations = requests, signer, revocations
        self.identities, self.clock, self.pki = identities, clock, pki

    def token(self, form: dict, *, basic_client: str | None, issuer: str, peer_certs=()) -> dict:
        """The token reply for ``form`` (first values of the form fields)."""
        grant = form.get("grant_type")
        if not grant:
            raise OAuthError("invalid_request", "grant_type missing")
        client_id = form.get("client_id") or basic_client
        if client_id not in CLIENTS:
            raise OAuthError("invalid_client", "client not found")
        if grant == "authorization_code":
            return self._code(form)
        if grant == "refresh_token":
            return self._refresh(form, client_id, issuer, peer_certs)
        if grant == TOKEN_EXCHANGE:
            return self._exchange(form, issuer, peer_certs)
        raise OAuthError("unsupported_grant_type", f"{grant} not supported")

    # -- authorization_code ----------------------------------------------------
    def _code(self, form: dict) -> dict:
        code, redirect_uri, verifier = form.get("code"), form.get("redirect_uri"), form.get("code_verifier")
        if not code or not redirect_uri:
            raise OAuthError("invalid_request", "code and redirect_uri are required")
        request = self.requests.by_code(code)
        if request is None:
            raise OAuthError("invalid_grant", "invalid code")
        if not verifier:
            raise OAuthError("invalid_request", "code_verifier required")
        # NOTE: a wrong verifier does not consume the code (the real controller's behaviour).
        if not hmac.compare_digest(s256(verifier), request.code_challenge):
            raise OAuthError("invalid_grant", "invalid code_verifier")
        if redirect_uri != request.redirect_uri:
            raise OAuthError("invalid_grant", "redirect_uri does not correspond")
        self.requests.remove(request)
        identity = self._usable_identity(request.identity_id)
        custom = self._custom(request, identity)
        session_cert = self._session_cert(custom, identity["id"], request.csr_pem)
        return self._reply(
            request.issuer, identity, custom, request.scopes, request.nonce, first=True, session_cert=session_cert
        )

    def _session_cert(self, custom: dict, identity_id: str, csr_pem: str | None) -> str | None:
        """``OIDC_AUTH_WITH_CSR``: sign ``csr_pem`` into the session's certificate and bind the tokens to it.

        ``z_cfs`` becomes the login certificate's fingerprint (``z_acf``, when there is one) and the new one's;
        the PEM goes back as ``session_cert``. A bad CSR is 400 ``invalid_request``.
        """
        if not csr_pem or self.pki is None:
            return None
        try:
            cert = self.pki.sign_api_session_csr(
                csr_pem, identity_id, custom["z_asid"], uuid.uuid4().hex, lifetime=SESSION_CERT_LIFETIME
            )
        except errors.ControllerError as ex:
            reason = (ex.cause or {}).get("reason") if isinstance(ex.cause, dict) else None
            raise OAuthError("invalid_request", f"invalid CSR: {reason or ex.message}") from None
        bound = fingerprint(cert)
        custom["z_cfs"] = [custom["z_acf"], bound] if custom.get("z_acf") else [bound]
        return self.pki.chain_pem(cert)

    def _custom(self, request: OidcAuthRequest, identity: dict) -> dict:
        flags = request.flags
        return session_claims(
            amr=list(request.amr),
            auth_time=request.auth_time,
            client_id=request.client_id,
            scopes=list(request.scopes),
            z_asid=request.api_session_id,
            z_aid=request.client_id,
            z_ct=list(request.config_types),
            z_ia=bool(identity.get("is_admin")),
            z_eid=identity.get("external_id") or "",
            z_cfs=[request.cert_fingerprint] if request.cert_fingerprint else None,
            z_acf=request.cert_fingerprint,
            z_sdk=request.sdk_info,
            z_env=request.env_info,
            z_ra=request.remote_address,
            z_ice=bool(flags.get("is_cert_extendable")),
            z_cer=bool(flags.get("is_cert_extend_requested")),
            z_ckrr=bool(flags.get("is_cert_key_roll_requested")),
            z_iccc=bool(flags.get("improper_client_cert_chain")),
            z_cae=request.allow_expired_certs,
            z_authid=request.authenticator_id,
        )

    # -- refresh_token ----------------------------------------------------------
    def _refresh(self, form: dict, client_id: str, issuer: str, peer_certs) -> dict:
        claims = self._subject(form.get("refresh_token"), REFRESH, peer_certs)
        if claims.get("client_id") != client_id:
            raise OAuthError("invalid_grant", "client_id does not match original grant")
        scopes = self._scopes(form.get("scope"), claims)
        identity = self._usable_identity(claims["sub"])
        # The rotated token is spent: its jti is revoked at once (the real one batches this).
        self.revocations.revoke(claims["jti"], "JTI")
        custom = _custom_of(claims)
        # a new session certificate only for a session already bound to one (z_cfs), as the real one
        rotated = self._session_cert(custom, identity["id"], form.get("csr_pem")) if claims.get("z_cfs") else None
        return self._reply(issuer, identity, custom, scopes, None, first=False, session_cert=rotated)

    # -- token exchange ---------------------------------------------------------
    def _exchange(self, form: dict, issuer: str, peer_certs) -> dict:
        subject_type = form.get("subject_token_type")
        if subject_type not in (ACCESS_TYPE, REFRESH_TYPE):
            raise OAuthError("invalid_request", "subject_token_type must be an access or refresh token")
        requested = form.get("requested_token_type") or ACCESS_TYPE
        if requested not in (ACCESS_TYPE, REFRESH_TYPE, ID_TYPE) or (
            subject_type == ACCESS_TYPE and requested == REFRESH_TYPE
        ):
            raise OAuthError("invalid_request", "requested_token_type is not allowed for this subject_token_type")
        audience = form.get("audience")
        if audience and audience not in CLIENTS:
            raise OAuthError("invalid_target", "audience not allowed")
        claims = self._subject(
            form.get("subject_token"), REFRESH if subject_type == REFRESH_TYPE else ACCESS, peer_certs
        )
        scopes = self._scopes(form.get("scope"), claims)
        identity = self._usable_identity(claims["sub"])
        custom = _custom_of(claims)
        if requested == ID_TYPE:
            id_token = self.signer.mint_id_token(issuer, identity, custom["client_id"], custom, None)
            return {
                "access_token": id_token,
                "issued_token_type": ID_TYPE,
                "token_type": "N_A",
                "expires_in": int(self.signer.lifetimes.id.total_seconds()),
                "scope": " ".join(scopes),
            }
        rotated = self._session_cert(custom, identity["id"], form.get("csr_pem")) if claims.get("z_cfs") else None
        access, _ = self.signer.mint(ACCESS, issuer, identity["id"], custom)
        out = {
            "access_token": access,
            "issued_token_type": requested,
            "token_type": "Bearer",
            "expires_in": int(self.signer.lifetimes.access.total_seconds()),
            "scope": " ".join(scopes),
        }
        if subject_type == REFRESH_TYPE and "offline_access" in scopes:
            out["refresh_token"], _ = self.signer.mint(REFRESH, issuer, identity["id"], custom)
        if rotated:
            out["session_cert"] = rotated
        return out

    # -- shared checks ----------------------------------------------------------
    def _subject(self, token, kind: str, peer_certs) -> dict:
        """A refresh or access token presented to the endpoint, verified and not revoked."""
        if not isinstance(token, str) or not token:
            raise OAuthError("invalid_request", "token missing")
        try:
            claims = self.signer.verify(token, kind)
        except TokenRejected as ex:
            if ex.reason == "expired":
                raise OAuthError("invalid_grant", f"{_name(kind)} token expired") from None
            if self.signer.looks_like_ours(token) and _verifies_as_other(self.signer, token, kind):
                raise OAuthError("invalid_grant", f"invalid token type, expected {_name(kind)}") from None
            raise OAuthError("invalid_grant", f"failed to parse {_name(kind)} token") from None
        if self.revocations.is_revoked(claims):
            raise OAuthError("invalid_grant", f"{_name(kind)} token revoked")
        if not holds_bound_cert(claims, peer_certs, self.clock.now()):
            raise OAuthError("access_denied", "peer certificate fingerprint does not match token")
        return claims

    @staticmethod
    def _scopes(requested, claims: dict) -> list[str]:
        granted = list(claims.get("scopes") or [])
        if not requested:
            return granted
        asked = requested.split() if isinstance(requested, str) else []
        if not asked or any(scope not in granted or scope not in SCOPES for scope in asked):
            raise OAuthError("invalid_scope", "requested scope is not part of the original grant")
        return asked

    def _usable_identity(self, identity_id: str) -> dict:
        identity = self.identities.find(identity_id)
        if identity is None:
            raise OAuthError("invalid_grant", "identity not found")
        if self.identities.is_disabled(identity):
            raise OAuthError("invalid_grant", "identity is disabled")
        return identity

    def _reply(
        self,
        issuer: str,
        identity: dict,
        custom: dict,
        scopes: list[str],
        nonce: str | None,
        *,
        first: bool,
        session_cert: str | None = None,
    ) -> dict:
        access, access_claims = self.signer.mint(ACCESS, issuer, identity["id"], custom)
        out = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": int(self.signer.lifetimes.access.total_seconds()),
            "id_token": self.signer.mint_id_token(issuer, identity, custom["client_id"], custom, nonce),
            "scope": " ".join(scopes),
        }
        if "offline_access" in scopes:
            # NOTE: the first refresh token shares the access token's jti, as the real controller's.
            out["refresh_token"], _ = self.signer.mint(
                REFRESH, issuer, identity["id"], custom, jti=access_claims["jti"] if first else None
            )
        if session_cert:
            out["session_cert"] = session_cert
        return out


def _custom_of(claims: dict) -> dict:
    return {key: claims[key] for key in CUSTOM if key in claims}


def _name(kind: str) -> str:
    return "refresh" if kind == REFRESH else "access"


def _verifies_as_other(signer: TokenSigner, token: str, kind: str) -> bool:
    other = ACCESS if kind == REFRESH else REFRESH
    try:
        signer.verify(token, other)
        return True
    except TokenRejected as ex:
        return ex.reason == "expired"
