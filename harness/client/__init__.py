"""``ZitiClient``: one method per operation of both APIs.

Methods are named after the operations (``listIdentities`` becomes
``client.management.list_identities``); path parameters are positional, the
JSON body is ``body=``, query parameters are keywords. Enveloped answers return
``data``; non-2xx answers raise :class:`ApiError`. The same client runs
in-process (no sockets) or against a URL over HTTP or HTTPS, with a client
certificate or an identity file.

For tests of the wire format the same client sends raw requests:
``client.mgmt("GET", "/identities")`` and ``client.edge("GET", "/services")``
return the ``httpx.Response`` (``mgmt_ok``/``edge_ok`` return ``data`` or raise),
``client.raw`` is the underlying ``httpx.Client``, and ``with_token`` /
``signed_in`` give more clients on the same connection with other sessions.
"""

from __future__ import annotations

import json
import re
import ssl
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import quote

import httpx

from harness.client.oidc import OidcError, OidcLogin, OidcTokens
from harness.client.operations import OPERATIONS
from harness.client.transport import inprocess, over_http, system_ssl_context

PREFIXES = {"client": "/edge/client/v1", "management": "/edge/management/v1", "fabric": "/fabric/v1"}
_PARAM = re.compile(r"{(\w+)}")


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


def data_of(response: httpx.Response) -> Any:
    """The ``data`` of an enveloped answer; raise :class:`ApiError` for a non-2xx one."""
    if response.status_code >= 300:
        raise ApiError(response)
    if not response.content:
        return None
    return response.json().get("data")


_PLURAL_ACRONYM = re.compile(r"([A-Z]{2,})s(?=[A-Z]|$)")
_ACRONYM_WORD = re.compile(r"([A-Z]+)([A-Z][a-z])")
_WORD = re.compile(r"([a-z0-9])([A-Z])")


def snake(op_id: str) -> str:
    """``listAPISessions`` -> ``list_api_sessions``."""
    text = _PLURAL_ACRONYM.sub(r"\1S", op_id)  # JWTs, CAs
    text = _ACRONYM_WORD.sub(r"\1_\2", text)
    return _WORD.sub(r"\1_\2", text).lower()


class SessionAuth(httpx.Auth):
    """Send ``zt-session`` (legacy) or ``Authorization: Bearer`` (OIDC, refreshed before expiry);
    on a 401, refresh or log in again once with the stored credentials."""

    def __init__(self, client: "ZitiClient"):
        self.client = client

    def auth_flow(self, request):
        client = self.client
        if request.url.path.startswith("/oidc/"):
            yield request
            return
        if client.oidc is not None:
            client.refresh_if_due()
        sent = self._attach(request, force=False)
        response = yield request
        if (
            response.status_code == 401
            and sent
            and client.relogin is not None
            and not request.url.path.endswith("/authenticate")
        ):
            client.recover()
            if self._attach(request, force=True):
                yield request

    def _attach(self, request, force: bool) -> bool:
        """Add the session credential unless the caller set its own; True when one was added."""
        client = self.client
        if client.oidc is not None:
            if force or "authorization" not in request.headers:
                request.headers["Authorization"] = f"Bearer {client.oidc.access_token}"
                return True
            return False
        if client.token and (force or "zt-session" not in request.headers):
            request.headers["zt-session"] = client.token
            return True
        return False


class OperationGroup:
    """The operations of one API as methods."""

    def __init__(self, client: "ZitiClient", api: str):
        self._client, self._api = client, api

    def __call__(self, method: str, path: str, **kwargs) -> httpx.Response:
        """Send a raw request under this API's prefix; return the response whatever its status."""
        return self._client.request(method, PREFIXES[self._api] + path, **kwargs)

    def call(
        self,
        op_id: str,
        *path_args: str,
        body: Any = None,
        headers: dict | None = None,
        raw: bool = False,
        content: bytes | str | None = None,
        **query,
    ) -> Any:
        """Send operation ``op_id``; return its ``data`` (or the response when ``raw``)."""
        method, path, _, _ = OPERATIONS[self._api][op_id]
        names = _PARAM.findall(path)
        if len(path_args) != len(names):
            raise TypeError(f"{op_id} takes {len(names)} path argument(s): {names}")
        for name, value in zip(names, path_args):
            path = path.replace("{" + name + "}", quote(str(value), safe=""))
        params = {k: v for k, v in query.items() if v is not None}
        kwargs: dict[str, Any] = {"params": params, "headers": headers or {}}
        if content is not None:
            kwargs["content"] = content
        elif body is not None:
            kwargs["json"] = body
        response = self._client.request(method, PREFIXES[self._api] + ("" if path == "/" else path), **kwargs)
        if raw:
            return response
        if response.status_code >= 300:
            raise ApiError(response)
        if not response.content:
            return None
        if not response.headers.get("content-type", "").startswith("application/json"):
            return response.text
        payload = response.json()
        return payload.get("data") if isinstance(payload, dict) and "data" in payload else payload

    def iterate(self, op_id: str, *path_args: str, page_size: int = 100, **query) -> Iterator[dict]:
        """Yield every item of a list operation, page by page."""
        offset = 0
        while True:
            response = self.call(op_id, *path_args, raw=True, limit=page_size, offset=offset, **query)
            if response.status_code >= 300:
                raise ApiError(response)
            payload = response.json()
            yield from payload["data"]
            page = payload["meta"]["pagination"]
            offset = page["offset"] + page["limit"]
            if page["totalCount"] <= offset or not payload["data"]:
                return


def _method(name: str, op_id: str, method: str, path: str):
    def operation(self: OperationGroup, *path_args, **kwargs):
        return self.call(op_id, *path_args, **kwargs)

    operation.__name__ = name
    operation.__doc__ = f"{method} {path} ({op_id})."
    return operation


def _group_class(api: str) -> type:
    # NOTE(perf): built at import, in every command line's process: each name is worked out once (~300 of them)
    names = {op_id: snake(op_id) for op_id in OPERATIONS[api]}
    namespace = {
        names[op_id]: _method(names[op_id], op_id, method, path)
        for op_id, (method, path, _, _) in OPERATIONS[api].items()
    }
    return type(f"{api.title()}Operations", (OperationGroup,), namespace)


ClientOperations = _group_class("client")
ManagementOperations = _group_class("management")
FabricOperations = _group_class("fabric")


class ZitiClient:
    """Both APIs of one controller, in-process or over the network."""

    def __init__(self, http: httpx.Client, token: str | None = None):
        self.http = http
        self.token = token
        self.relogin = None
        # per request, not on the httpx client: clients sharing one connection carry their own sessions
        self._auth = SessionAuth(self)
        #: the OIDC tokens when logged in by OIDC (then sent as ``Authorization: Bearer``)
        self.oidc: OidcTokens | None = None
        self._oidc_flow: OidcLogin | None = None
        #: the clock token ages are measured on (tests set the controller's frozen clock)
        self.now = time.time
        self.management = ManagementOperations(self, "management")
        #: the fabric API (``/fabric/v1``): routers, links, circuits as the Admin Console reads them
        self.fabric = FabricOperations(self, "fabric")
        self.edge = ClientOperations(self, "client")

    @property
    def session_token(self) -> str | None:
        """The credential a router hello carries: the OIDC access token, else ``zt-session``."""
        return self.oidc.access_token if self.oidc is not None else self.token

    # -- raw access, for tests of the wire format -------------------------------
    @property
    def raw(self) -> httpx.Client:
        """The underlying ``httpx.Client`` (no session header added)."""
        return self.http

    @property
    def mgmt(self) -> OperationGroup:
        """The management API: ``client.mgmt("GET", "/identities")`` sends a raw request."""
        return self.management

    def request(self, method: str, path: str, **kwargs) -> httpx.Response:
        """Send a raw request to ``path`` (with its API prefix), carrying this client's session."""
        return self.http.request(method, path, auth=self._auth, **kwargs)

    def mgmt_ok(self, method: str, path: str, **kwargs) -> Any:
        """A raw management request; return its ``data`` or raise :class:`ApiError`."""
        return data_of(self.mgmt(method, path, **kwargs))

    def edge_ok(self, method: str, path: str, **kwargs) -> Any:
        """A raw client API request; return its ``data`` or raise :class:`ApiError`."""
        return data_of(self.edge(method, path, **kwargs))

    def create(self, collection: str, body: dict) -> str:
        """Create a management entity (``collection`` as in its path); return its id."""
        return self.mgmt_ok("POST", f"/{collection}", json=body)["id"]

    def with_token(self, token: str | None) -> "ZitiClient":
        """Another client on the same connection, carrying session ``token``."""
        return type(self)(self.http, token)

    def signed_in(self, username: str, password: str, api: str = "management", **body) -> "ZitiClient":
        """Authenticate by password; return another client on this connection carrying that session.

        Unlike :meth:`login`, this client is left as it was and no re-login is set up.
        """
        group = self.management if api == "management" else self.edge
        response = group(
            "POST",
            "/authenticate",
            params={"method": "password"},
            json={"username": username, "password": password, **body},
            headers={"zt-session": ""},
        )
        return self.with_token(data_of(response)["token"])

    # -- construction -------------------------------------------------------
    @classmethod
    def in_process(cls, app, peer_certs=None) -> "ZitiClient":
        """A client that calls the WSGI ``app`` directly, optionally presenting a certificate chain."""
        return cls(inprocess(app, peer_certs))

    @classmethod
    def connect(
        cls,
        url: str,
        *,
        ca: str | None = None,
        cert: tuple[str, str] | None = None,
        verify: bool = True,
        timeout: float = 10.0,
    ) -> "ZitiClient":
        """A client for a controller at ``url``; ``ca`` is a PEM bundle path, ``cert`` (chain file, key file)."""
        if url.startswith("https"):
            if not verify:  # no CA bundle to load (~20 ms) only to ignore it
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            elif ca or cert:
                context = ssl.create_default_context(cafile=ca) if ca else ssl.create_default_context()
                if cert:
                    context.load_cert_chain(*cert)
            else:
                context = system_ssl_context()
            return cls(httpx.Client(base_url=url, verify=context, timeout=timeout))
        return cls(over_http(url, timeout=timeout))

    @classmethod
    def from_identity_file(cls, path: str | Path, timeout: float = 10.0) -> "ZitiClient":
        """A client built from an SDK identity file ``{ztAPI, id: {cert, key, ca}}``."""
        identity = json.loads(Path(path).read_text())
        folder = Path(tempfile.mkdtemp(prefix="ziti-id-"))
        files = {}
        for name in ("cert", "key", "ca"):
            value = identity["id"][name]
            value = (
                value[len("pem:") :]
                if value.startswith("pem:")
                else Path(value).read_text()
                if "\n" not in value
                else value
            )
            files[name] = folder / f"{name}.pem"
            files[name].write_text(value)
            files[name].chmod(0o600)
        return cls.connect(
            identity["ztAPI"], ca=str(files["ca"]), cert=(str(files["cert"]), str(files["key"])), timeout=timeout
        )

    # -- sessions -------------------------------------------------------------
    def login(
        self, username: str, password: str, *, api: str = "management", totp=None, oidc: str | None = None, **body
    ) -> dict:
        """Authenticate by password; the client then carries the session (and logs in again on 401).

        Args:
            username: the updb username.
            password: its password.
            api: ``management`` or ``client``.
            totp: an authenticator (anything with ``code()``, e.g. ``flows.TotpDevice``) that answers
                the session's MFA query, on this login and on every automatic re-login.
            oidc: log in by OIDC in this SDK style (``c`` or ``go``) instead of ``/authenticate``.
            **body: more authenticate fields (``configTypes``, ``sdkInfo``, ``envInfo``).

        Returns:
            The API session.
        """
        if oidc:
            return self.login_oidc("password", style=oidc, totp=totp, username=username, password=password, **body)
        group = self.management if api == "management" else self.edge

        def again():
            data = group.call(
                "authenticate", method="password", body={"username": username, "password": password, **body}
            )
            self.token = data["token"]
            if totp is not None and any(q.get("typeId") == "MFA" for q in data.get("authQueries") or []):
                group.call("authenticateMfa", body={"code": totp.code()})
                data = group.call("getCurrentAPISession")
            return data

        self._use_legacy(again)
        return again()

    def login_cert(self, *, api: str = "client", oidc: str | None = None, totp=None, **body) -> dict:
        """Authenticate with the client certificate presented on the connection (``oidc``: by OIDC)."""
        if oidc:
            return self.login_oidc("cert", style=oidc, totp=totp, **body)
        group = self.management if api == "management" else self.edge

        def again():
            data = group.call("authenticate", method="cert", body=body or {})
            self.token = data["token"]
            return data

        self._use_legacy(again)
        return again()

    def login_oidc(
        self, method: str = "cert", *, style: str = "c", totp=None, bearer: str | None = None, **body
    ) -> dict:
        """Log in by OIDC (PKCE) as an SDK does; later calls carry the access token and refresh it.

        Args:
            method: ``cert``, ``password`` or ``ext-jwt``.
            style: ``c`` (C SDK requests) or ``go`` (sdk-golang requests).
            totp: answers the TOTP step when the login asks for it.
            bearer: the external JWT of an ``ext-jwt`` login.
            **body: login fields (``username``, ``password``, ``configTypes``, ``sdkInfo``, ``envInfo``).

        Returns:
            The API session (``GET /current-api-session``).

        Raises:
            OidcError: a step of the flow failed (``response`` holds the reply).
        """
        flow = OidcLogin(self.http, method, style, body, totp, bearer, now=lambda: self.now())

        def again():
            self.oidc = flow.run()
            return self.edge.call("getCurrentAPISession")

        self.token, self._oidc_flow, self.relogin = None, flow, again
        return again()

    def _use_legacy(self, again) -> None:
        self.oidc, self._oidc_flow, self.relogin = None, None, again

    def refresh_if_due(self) -> None:
        """Refresh the OIDC tokens past two thirds of the access token's life."""
        if self.oidc is not None and self.oidc.due(self.now()):
            self.refresh()

    def refresh(self) -> None:
        """Refresh the OIDC tokens now; log in again when the refresh is refused."""
        try:
            self.oidc = self._oidc_flow.refresh(self.oidc)
        except OidcError:
            self.relogin()

    def recover(self) -> None:
        """After a 401: an OIDC session refreshes (or logs in again), a legacy one logs in again."""
        if self.oidc is not None:
            self.refresh()
            return
        self.token = None
        self.relogin()

    def logout(self) -> None:
        if self.token or self.oidc:
            self.edge.call("deleteCurrentApiSession")
        self.token = self.oidc = self._oidc_flow = None
        self.relogin = None

    def close(self) -> None:
        self.http.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
