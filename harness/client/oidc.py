"""OIDC login as the SDKs do it: PKCE authorize, login, TOTP, callback, code exchange, refresh.

Two styles, matching the real SDKs' request sequences:

* ``c``: the C SDK 1.18.3: client ``openziti``, ``POST /oidc/authorize`` with the
  parameters in the query (no redirects followed), ``POST /oidc/login/<method>?id=``
  with a JSON body, TOTP as a form, the callback's ``code=...&state=...`` tail
  sent whole in the token form, refresh by the ``refresh_token`` grant.
* ``go``: sdk-golang v1.x: client ``native``, ``GET /oidc/authorize`` following the
  redirect to the login page, form logins, JSON TOTP, a ``nonce`` checked in the
  ID token, refresh by RFC 8693 token exchange.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import httpx

C_REDIRECT = "http://localhost:20314/auth/callback"
GO_REDIRECT = "http://localhost:8080/auth/callback"
EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
TOKEN_TYPE = "urn:ietf:params:oauth:token-type:"
SCOPE = "openid offline_access"


class OidcError(Exception):
    """An OIDC step failed; ``response`` is the HTTP reply."""

    def __init__(self, step: str, response: httpx.Response):
        super().__init__(f"OIDC {step} failed: {response.status_code} {response.text[:200]}")
        self.step, self.response = step, response

    @property
    def body(self) -> dict:
        try:
            return self.response.json()
        except ValueError:
            return {}


@dataclass
class OidcTokens:
    """The tokens of one OIDC session and when they were issued (client time)."""

    access_token: str
    refresh_token: str | None
    id_token: str | None
    expires_in: int
    issued_at: float
    claims: dict = field(default_factory=dict)

    @classmethod
    def from_reply(cls, reply: dict, now: float) -> "OidcTokens":
        import jwt  # here: its import (with cryptography's) is a tenth of a command line's start-up

        claims = jwt.decode(reply["access_token"], options={"verify_signature": False})
        return cls(
            reply["access_token"],
            reply.get("refresh_token"),
            reply.get("id_token"),
            int(reply["expires_in"]),
            now,
            claims,
        )

    def due(self, now: float) -> bool:
        """True past two thirds of the access token's life (the C SDK refreshes between 1/2 and 5/6)."""
        return now - self.issued_at >= self.expires_in * 2 / 3


def pkce() -> tuple[str, str]:
    verifier = base64.urlsafe_b64encode(secrets.token_bytes(40)).rstrip(b"=").decode()
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


@dataclass
class OidcLogin:
    """One PKCE login over ``http`` (an httpx client of the controller).

    Args:
        http: the client's httpx client (it carries the TLS certificate for cert logins).
        method: ``cert``, ``password`` or ``ext-jwt``.
        style: ``c`` or ``go`` (see the module docstring).
        body: login fields (``username``, ``password``, ``configTypes``, ``sdkInfo``, ``envInfo``).
        totp: anything with ``code()`` answering a TOTP query.
        bearer: an external JWT for ``ext-jwt``.
        now: the clock the tokens' ages are measured on.
    """

    http: httpx.Client
    method: str = "cert"
    style: str = "c"
    body: dict = field(default_factory=dict)
    totp: object = None
    bearer: str | None = None
    now: object = time.time

    @property
    def client_id(self) -> str:
        return "openziti" if self.style == "c" else "native"

    @property
    def redirect_uri(self) -> str:
        return C_REDIRECT if self.style == "c" else GO_REDIRECT

    def run(self) -> OidcTokens:
        """Log in; return the tokens."""
        verifier, challenge = pkce()
        state, nonce = secrets.token_urlsafe(16), secrets.token_urlsafe(24)
        request_id = self.authorize(challenge, state, nonce)
        reply = self.login(request_id)
        if reply.status_code == 200 and reply.headers.get("totp-required", "").startswith("t"):
            reply = self.answer_totp(request_id)
        if not reply.is_redirect:
            raise OidcError("login", reply)
        callback = self.http.get(_path(reply.headers["location"]))
        if not callback.is_redirect or "code=" not in callback.headers.get("location", ""):
            raise OidcError("callback", callback)
        location = callback.headers["location"]
        if self.style == "go" and parse_qs(urlsplit(location).query).get("state") != [state]:
            raise OidcError("callback state", callback)
        tokens = self.exchange_code(location, verifier, state)
        if self.style == "go" and tokens.id_token:
            import jwt

            id_claims = jwt.decode(tokens.id_token, options={"verify_signature": False})
            if id_claims.get("nonce") != nonce:
                raise OidcError("nonce", callback)
        return tokens

    def authorize(self, challenge: str, state: str, nonce: str) -> str:
        params = {
            "client_id": self.client_id,
            "scope": SCOPE,
            "response_type": "code",
            "redirect_uri": self.redirect_uri,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": state,
        }
        if self.style == "c":
            reply = self.http.post(
                "/oidc/authorize", params={**params, "audience": "openziti"}, headers={"Accept": "application/json"}
            )
            location = reply.headers.get("location", "")
            if not reply.is_redirect or "authRequestID=" not in location:
                raise OidcError("authorize", reply)
            return location.split("authRequestID=", 1)[1].split("&", 1)[0]
        if self.method != "cert":
            params["method"] = self.method
        reply = self.http.get("/oidc/authorize", params={**params, "nonce": nonce})
        if reply.is_redirect:
            reply = self.http.get(_path(reply.headers["location"]))
        if reply.status_code != 200 or not reply.headers.get("auth-request-id"):
            raise OidcError("authorize", reply)
        return reply.headers["auth-request-id"]

    def login(self, request_id: str) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.bearer}"} if self.bearer else {}
        path = f"/oidc/login/{self.method}"
        if self.style == "c":
            return self.http.post(path, params={"id": request_id}, json=self.body, headers=headers)
        form = {"id": request_id, **_flatten(self.body)}
        return self.http.post(path, data=form, headers=headers)

    def answer_totp(self, request_id: str) -> httpx.Response:
        if self.totp is None:
            raise OidcError("totp (no TOTP device given)", httpx.Response(401, text="TOTP required"))
        code = self.totp.code()
        if self.style == "c":
            reply = self.http.post("/oidc/login/totp", data={"id": request_id, "code": code})
        else:
            reply = self.http.post("/oidc/login/totp", json={"id": request_id, "code": code})
        if not reply.is_redirect:
            raise OidcError("totp", reply)
        return reply

    def exchange_code(self, location: str, verifier: str, state: str) -> OidcTokens:
        if self.style == "c":
            # The C SDK sends everything after ``code=`` unescaped: ``code=<code>&state=<state>``.
            tail = location.split("code=", 1)[1]
            content = (
                f"state={state}&code={tail}&grant_type=authorization_code&code_verifier={verifier}"
                f"&client_id={self.client_id}&redirect_uri={self.redirect_uri}"
            )
            reply = self.http.post(
                "/oidc/oauth/token", content=content, headers={"Content-Type": "application/x-www-form-urlencoded"}
            )
        else:
            code = parse_qs(urlsplit(location).query)["code"][0]
            reply = self.http.post(
                "/oidc/oauth/token",
                data={
                    "grant_type": "authorization_code",
                    "client_id": self.client_id,
                    "code_verifier": verifier,
                    "code": code,
                    "redirect_uri": self.redirect_uri,
                },
            )
        return self._tokens("code exchange", reply)

    def refresh(self, tokens: OidcTokens) -> OidcTokens:
        """New tokens: the ``refresh_token`` grant (C) or two token exchanges (Go)."""
        basic = {"Authorization": "Basic " + base64.b64encode(f"{self.client_id}:".encode()).decode()}
        if self.style == "c":
            reply = self.http.post(
                "/oidc/oauth/token",
                headers=basic,
                data={
                    "client_id": self.client_id,
                    "grant_type": "refresh_token",
                    "refresh_token": tokens.refresh_token,
                },
            )
            return self._tokens("refresh", reply)
        form = {
            "grant_type": EXCHANGE,
            "subject_token": tokens.refresh_token,
            "subject_token_type": TOKEN_TYPE + "refresh_token",
        }
        first = self.http.post(
            "/oidc/oauth/token", headers=basic, data={**form, "requested_token_type": TOKEN_TYPE + "refresh_token"}
        )
        renewed = self._tokens("token exchange", first)
        second = self.http.post(
            "/oidc/oauth/token", headers=basic, data={**form, "requested_token_type": TOKEN_TYPE + "id_token"}
        )
        if second.status_code != 200:
            raise OidcError("token exchange (id token)", second)
        renewed.id_token = second.json()["access_token"]
        return renewed

    def _tokens(self, step: str, reply: httpx.Response) -> OidcTokens:
        if reply.status_code != 200:
            raise OidcError(step, reply)
        return OidcTokens.from_reply(reply.json(), self.now())


def _path(location: str) -> str:
    """The path and query of a Location (the C SDK ignores its host)."""
    parts = urlsplit(location)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _flatten(body: dict) -> dict:
    """Login fields as sdk-golang's form: nested SDK/env info flattened (``sdkType``, ``envOs``...)."""
    form = {k: v for k, v in body.items() if k not in ("sdkInfo", "envInfo") and v is not None}
    if isinstance(form.get("configTypes"), list):
        form["configTypes"] = ",".join(form["configTypes"])
    for prefix, key in (("sdk", "sdkInfo"), ("env", "envInfo")):
        for name, value in (body.get(key) or {}).items():
            form[prefix + name[:1].upper() + name[1:]] = value
    return form


__all__ = ["OidcError", "OidcLogin", "OidcTokens"]
