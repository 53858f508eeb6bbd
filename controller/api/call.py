"""One request as a handler sees it: parsed body, parameters, session."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controller.api.auth_wire import auth_request
from controller.api.bearer import bearer_tokens
from controller.auth.request import AuthRequest
from controller.auth.session_tokens import Presented
from controller.store.change_context import ChangeContext


@dataclass
class Created:
    """A create reply: 201 with ``{_links, id}``."""

    collection: str
    id: str
    status: int = 201


def change_of(req) -> ChangeContext:
    """The change context of a Falcon request (for resources served without a ``Call``)."""
    return ChangeContext.rest(req.method, req.path, req.context.request_id, req.remote_addr)


class Call:
    """The request context handed to every operation handler."""

    __slots__ = ("op", "api", "req", "resp", "params", "body", "session", "identity", "request_id", "resolved")

    def __init__(self, op, api: str, req, resp, params: dict):
        self.op, self.api = op, api
        self.req, self.resp, self.params = req, resp, params
        self.body: Any = None
        self.session: dict | None = None
        self.identity: dict | None = None
        #: the resolved API session (pending factors, OIDC claims) when one is attached
        self.resolved = None
        self.request_id: str = req.context.request_id

    # -- parameters -------------------------------------------------------
    def param(self, name: str = "id") -> str:
        return self.params[name]

    def query(self, name: str, default: str | None = None) -> str | None:
        value = self.req.get_param(name)
        return default if value is None else value

    def query_list(self, name: str) -> list[str]:
        """A repeatable query parameter; comma-separated values are split too."""
        values = self.req.get_param_as_list(name) or []
        out: list[str] = []
        for value in values:
            out.extend(part for part in value.split(",") if part != "")
        return out

    def list_args(self) -> dict:
        """``filter``, ``limit``, ``offset`` and ``sort`` as ``list_page`` takes them."""
        return {
            "filter": self.query("filter"),
            "limit": self.query("limit"),
            "offset": self.query("offset"),
            "sort": self.query("sort"),
        }

    def header(self, name: str) -> str | None:
        return self.req.get_header(name)

    def set_header(self, name: str, value: str) -> None:
        self.resp.set_header(name, value)

    # -- connection facts -------------------------------------------------
    @property
    def peer_certs(self) -> list:
        # APPSEC(lead): the client chain comes only from the TLS layer (or the
        # in-process harness wrapper), never from a request header.
        return self.req.env.get("controller.peer_certs") or []

    def bearer_tokens(self) -> tuple[str, ...]:
        """The first three ``Authorization: Bearer`` values (prefix exact, like the real controller)."""
        return tuple(bearer_tokens(self.header("Authorization")))

    def presented(self) -> Presented:
        """The session credentials this request presents."""
        value = self.header("zt-session") or self.header("net-session")
        return Presented(
            value.strip() if value and value.strip() else None,
            self.bearer_tokens(),
            tuple(self.peer_certs),
            self.client_ip,
        )

    def auth_request(self, method: str | None) -> AuthRequest:
        """An :class:`AuthRequest` of this request's body and connection."""
        return auth_request(
            method or "",
            self.body,
            peer_certs=self.peer_certs,
            bearer_tokens=self.bearer_tokens(),
            remote_address=self.client_ip,
            context=self.change,
        )

    @property
    def change(self) -> ChangeContext:
        """The context of this request's writes: managers' write methods take it as ``context``."""
        return change_of(self.req)

    @property
    def client_ip(self) -> str:
        return self.req.remote_addr or ""

    @property
    def is_admin(self) -> bool:
        return bool(self.identity and self.identity.get("is_admin"))
