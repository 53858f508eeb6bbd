"""Raw wire access to both APIs (for tests of the wire format) and ``ApiError``.

``Api.mgmt(...)`` and ``Api.edge(...)`` send raw requests under the management
and client prefixes; ``login`` authenticates and returns a client carrying the
session token. Non-2xx answers raise :class:`ApiError` from the ``*_ok``
helpers; the raw helpers return the response for wire-level tests.
"""
from __future__ import annotations

from typing import Any

import httpx

MANAGEMENT_PREFIX = "/edge/management/v1"
CLIENT_PREFIX = "/edge/client/v1"


class ApiError(Exception):
    """A non-2xx answer from the controller."""

    def __init__(self, response: httpx.Response):
        self.response = response
        self.status = response.status_code
        try:
            error = response.json().get("error", {})
        except ValueError:
            error = {}
        self.code = error.get("code")
        self.message = error.get("message")
        self.cause = error.get("cause")
        self.request_id = error.get("requestId")
        super().__init__(f"{self.status} {self.code}: {self.message} {self.cause or ''}".strip())


class Api:
    """Raw access to both APIs of one controller, optionally with a session."""

    def __init__(self, http: httpx.Client, token: str | None = None):
        self.raw = http
        self.token = token

    def with_token(self, token: str | None) -> "Api":
        return Api(self.raw, token)

    def _headers(self, headers: dict | None) -> dict:
        out = dict(headers or {})
        if self.token and "zt-session" not in {k.lower() for k in out}:
            out["zt-session"] = self.token
        return out

    def request(self, method: str, path: str, *, headers: dict | None = None, **kwargs) -> httpx.Response:
        return self.raw.request(method, path, headers=self._headers(headers), **kwargs)

    def mgmt(self, method: str, path: str, **kwargs) -> httpx.Response:
        return self.request(method, MANAGEMENT_PREFIX + path, **kwargs)

    def edge(self, method: str, path: str, **kwargs) -> httpx.Response:
        return self.request(method, CLIENT_PREFIX + path, **kwargs)

    def mgmt_ok(self, method: str, path: str, **kwargs) -> Any:
        return _data(self.mgmt(method, path, **kwargs))

    def edge_ok(self, method: str, path: str, **kwargs) -> Any:
        return _data(self.edge(method, path, **kwargs))

    def login(self, username: str, password: str, api: str = "management", **body) -> "Api":
        """Authenticate by password; return an ``Api`` carrying the session token."""
        send = self.mgmt if api == "management" else self.edge
        response = send("POST", "/authenticate", params={"method": "password"},
                        json={"username": username, "password": password, **body}, headers={"zt-session": ""})
        data = _data(response)
        return Api(self.raw, data["token"])

    def create(self, collection: str, body: dict) -> str:
        """Create a management entity; return its id."""
        return self.mgmt_ok("POST", f"/{collection}", json=body)["id"]


def _data(response: httpx.Response) -> Any:
    if response.status_code >= 300:
        raise ApiError(response)
    if not response.content:
        return None
    return response.json().get("data")
