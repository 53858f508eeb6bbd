"""Shared helpers of the OIDC tests: enrolled certificate clients and raw PKCE steps."""

from __future__ import annotations

import base64
from urllib.parse import parse_qs, urlsplit

import httpx

from harness.client import ZitiClient
from harness.client.oidc import C_REDIRECT, pkce
from harness.dataplane import flows

TOKEN = "/oidc/oauth/token"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def enrolled_identity(ziti_admin: ZitiClient, name: str, **fields) -> tuple[str, flows.EnrolledIdentity]:
    """Create an identity with an ott enrollment and enroll it; ``(identity id, identity file)``."""
    created = ziti_admin.management.create_identity(
        body={"name": name, "type": "User", "isAdmin": False, "enrollment": {"ott": True}, **fields}
    )
    jwt_text = ziti_admin.management.detail_identity(created["id"])["enrollment"]["ott"]["jwt"]
    return created["id"], flows.enroll_ott(ziti_admin, jwt_text)


def password_identity(ziti_admin: ZitiClient, name: str, password: str = "s3cret-pw", **fields) -> str:
    created = ziti_admin.management.create_identity(body={"name": name, "type": "User", "isAdmin": False, **fields})
    ziti_admin.management.create_authenticator(
        body={"identityId": created["id"], "method": "updb", "username": name, "password": password}
    )
    return created["id"]


def start(
    http: httpx.Client,
    *,
    client_id: str = "openziti",
    redirect_uri: str = C_REDIRECT,
    method: str | None = None,
    **overrides,
) -> tuple[str, str]:
    """``POST /oidc/authorize`` as the C SDK; returns (auth request id, PKCE verifier)."""
    verifier, challenge = pkce()
    params = {
        "client_id": client_id,
        "scope": "openid offline_access",
        "response_type": "code",
        "redirect_uri": redirect_uri,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st4te",
        **({"method": method} if method else {}),
        **overrides,
    }
    reply = http.post("/oidc/authorize", params=params)
    assert reply.status_code == 302, reply.text
    return reply.headers["location"].split("authRequestID=")[1], verifier


def password_login(http: httpx.Client, request_id: str, username: str, password: str) -> httpx.Response:
    return http.post("/oidc/login/password", data={"id": request_id, "username": username, "password": password})


def code_of(http: httpx.Client, request_id: str) -> str:
    reply = http.get("/oidc/authorize/callback", params={"id": request_id})
    return parse_qs(urlsplit(reply.headers["location"]).query)["code"][0]


def exchange(http: httpx.Client, code: str, verifier: str, redirect_uri: str = C_REDIRECT, **extra) -> httpx.Response:
    return http.post(
        TOKEN,
        data={
            "grant_type": "authorization_code",
            "client_id": "openziti",
            "code": code,
            "code_verifier": verifier,
            "redirect_uri": redirect_uri,
            **extra,
        },
    )


def password_tokens(http: httpx.Client, username: str, password: str) -> dict:
    """A full password login by OIDC; the token reply."""
    request_id, verifier = start(http, method="password")
    assert password_login(http, request_id, username, password).status_code == 302
    reply = exchange(http, code_of(http, request_id), verifier)
    assert reply.status_code == 200, reply.text
    return reply.json()


def refresh(http: httpx.Client, refresh_token: str, client_id: str = "openziti") -> httpx.Response:
    basic = base64.b64encode(f"{client_id}:".encode()).decode()
    return http.post(
        TOKEN,
        headers={"Authorization": f"Basic {basic}"},
        data={"client_id": client_id, "grant_type": "refresh_token", "refresh_token": refresh_token},
    )


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def oauth_error(reply: httpx.Response, status: int, error: str, description: str | None = None) -> None:
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert body["error"] == error, body
    if description is not None:
        assert body["error_description"] == description, body


def ziti_error(reply: httpx.Response, status: int, code: str) -> dict:
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert body["code"] == code and "data" not in body and "meta" not in body, body
    return body
