"""The discovery document's other endpoints: ``userinfo``, token introspection and ``end_session``.

As the real controller serves them (its OIDC library's legacy server over the
controller's storage):

* ``userinfo`` takes an access token (bearer or ``access_token`` field).
  Missing: 401 ``invalid_request``. Not a token of this issuer, or expired:
  401 ``access_denied``. Its ``jti`` revoked: 403 ``access_denied``. Signed by
  this controller but not an access token: 403 ``server_error``. Otherwise 200
  with an empty object: the real storage fills the user info only for the
  ``openid`` scope, and it passes no scopes on this path.
* Introspection needs an authenticated client, and the controller's two OIDC
  clients are public (no secret), so no caller can ever be one: without
  credentials 400 ``invalid_client``; with any 400 ``unauthorized_client``.
* Revocation (RFC 7009) names a known client (``client_id``, form or Basic)
  and a ``token``; a refresh or access token of ours (expired or not) has its
  ``jti`` revoked, anything else is accepted and ignored: 200 with ``null``.
* A TOTP token (``POST /current-api-session/totp-token`` of an OIDC session) is
  signed here: ``z_t`` "t", the session's ``sub``, ``aud`` and ``z_asid``, no expiry.
* ``end_session`` checks the optional ``id_token_hint`` (ours, issuer and
  signature; expiry tolerated), ``client_id`` against its ``azp``, and
  ``post_logout_redirect_uri`` against the clients' logout URIs; then revokes
  the hint's API session (``z_asid``), or without one every token of its
  subject issued so far, and redirects (``/oidc/logged-out`` by default, with
  ``state`` appended).
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from urllib.parse import urlencode

from controller.oidc.flow import OAuthError
from controller.oidc.tokens import ACCESS, CLIENTS, REFRESH
from controller.pki.jwt_signature import TokenRejected, verify_signature

LOGGED_OUT = "/oidc/logged-out"
#: the ``z_t`` of a TOTP token
TOTP = "t"
#: the real controller's default post-logout redirect URIs (``*``: any port on the loopback)
LOGOUT_REDIRECTS = (
    re.compile(r"^openziti://auth/logout$"),
    re.compile(r"^https?://(127\.0\.0\.1|localhost)(:[0-9]*)?/auth/logout$"),
)


class TokenInfo:
    """What a holder of a token may ask about it, and logging out by an ID token."""

    def __init__(self, signer, revocations, *, clock):
        self.signer, self.revocations, self.clock = signer, revocations, clock

    def userinfo(self, token: str | None, issuer: str) -> dict:
        if not token:
            raise OAuthError("invalid_request", "access token missing", 401)
        claims = self._ours(token, issuer)
        if claims is None or self._expired(claims):
            raise OAuthError("access_denied", "access token invalid", 401)
        if self.revocations.is_revoked({"jti": claims.get("jti")}):
            raise OAuthError("access_denied", "access token revoked", 403)
        if claims.get("z_t") != ACCESS:
            raise OAuthError("server_error", "token is invalid type", 403)
        return {}

    def introspect(self, token: str | None, *, client_secret: str | None, client_assertion: str | None) -> dict:
        if not client_secret and not client_assertion:
            raise OAuthError("invalid_client", "client must be authenticated")
        if not token:
            raise OAuthError("invalid_request", "token missing")
        raise OAuthError("unauthorized_client", "")

    def revoke(self, token: str | None, client_id: str | None, *, context=None) -> None:
        if client_id not in CLIENTS:
            raise OAuthError("invalid_client", "client not found")
        if not token:
            raise OAuthError("invalid_request", "token missing")
        claims = self._refresh_claims(token) or self._ours_any_issuer(token)
        if claims is not None and isinstance(claims.get("jti"), str) and claims["jti"]:
            self.revocations.revoke(claims["jti"], "JTI", context=context)

    def _refresh_claims(self, token: str) -> dict | None:
        try:
            return self.signer.verify(token, REFRESH)
        except TokenRejected:
            return None

    def _ours_any_issuer(self, token: str) -> dict | None:
        if not self.signer.looks_like_ours(token):
            return None
        try:
            return verify_signature(token, self.signer.public_key, [self.signer.alg])
        except TokenRejected:
            return None

    def totp_token(self, access_claims: dict) -> tuple[str, datetime]:
        """A TOTP token (``z_t`` "t") for the session of ``access_claims``: the proof of a TOTP check just made.

        No expiry: it is scoped to the API session (``z_asid``) it names, as the real one.
        """
        now = self.clock.now()
        claims = {
            "iss": access_claims.get("iss"),
            "sub": access_claims.get("sub"),
            "iat": int(now.timestamp()),
            "jti": str(uuid.uuid4()),
            "z_asid": access_claims.get("z_asid"),
            "z_t": TOTP,
        }
        audience = access_claims.get("aud")
        if audience:
            claims["aud"] = audience if isinstance(audience, list) else [audience]
        return self.signer.sign(claims), now

    def end_session(self, params: dict, issuer: str, *, context=None) -> str:
        """Log out by ``params``; the URL to redirect to."""
        redirect, hint = LOGGED_OUT, params.get("id_token_hint")
        client_id = params.get("client_id") or ""
        claims = None
        if hint:
            claims = self._ours(hint, issuer)
            if claims is None:
                raise OAuthError("invalid_request", "id_token_hint invalid")
            azp = claims.get("azp") or ""
            if client_id and client_id != azp:
                raise OAuthError("invalid_request", "client_id does not match azp of id_token_hint")
            client_id = azp
        if client_id:
            if client_id not in CLIENTS:
                raise OAuthError("invalid_client", "client not found")
            wanted = params.get("post_logout_redirect_uri")
            if wanted:
                if not any(pattern.match(wanted) for pattern in LOGOUT_REDIRECTS):
                    raise OAuthError("invalid_request", "post_logout_redirect_uri invalid")
                redirect = wanted
        if params.get("state"):
            redirect += ("&" if "?" in redirect else "?") + urlencode({"state": params["state"]})
        if claims is not None:
            self._revoke(claims, context)
        return redirect

    def _revoke(self, claims: dict, context) -> None:
        session_id, subject = claims.get("z_asid"), claims.get("sub")
        if isinstance(session_id, str) and session_id:
            self.revocations.revoke(session_id, "API_SESSION", context=context)
        elif isinstance(subject, str) and subject:
            self.revocations.revoke(subject, "IDENTITY", context=context)

    def _ours(self, token: str, issuer: str) -> dict | None:
        """The claims of a token this controller signed for ``issuer`` (expired or not), else None."""
        claims = self._ours_any_issuer(token)
        return claims if isinstance(claims, dict) and claims.get("iss") == issuer else None

    def _expired(self, claims: dict) -> bool:
        exp = claims.get("exp")
        return isinstance(exp, bool) or not isinstance(exp, int) or self.clock.now().timestamp() >= exp
