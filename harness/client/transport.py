"""Transports for the harness client: in-process WSGI or a real socket."""

from __future__ import annotations

import ssl
from functools import cache

import httpx


class PeerCertWSGI:
    """WSGI wrapper that hands a client certificate chain to the app in-process.

    APPSEC(lead): this stands in for the TLS listener in tests only; the
    controller reads the chain from ``environ["controller.peer_certs"]``, which
    no HTTP header can set.
    """

    def __init__(self, app, peer_certs=None):
        self.app = app
        self.peer_certs = list(peer_certs or [])

    def __call__(self, environ, start_response):
        environ["controller.peer_certs"] = list(self.peer_certs)
        return self.app(environ, start_response)


class SwappableApp:
    """A WSGI app that forwards to whichever app is current (one server, fresh app per test)."""

    def __init__(self, app=None):
        self.app = app

    @property
    def large_bodies(self):
        """The paths every controller app takes large bodies on (the listener is built before any app is mounted)."""
        from controller.app import ControllerApp  # here: a command-line client never loads the controller

        return ControllerApp.large_bodies

    @property
    def controller(self):
        """The mounted app's controller."""
        return getattr(self.app, "controller", None)

    def admin_presented(self, zt_session: str | None, bearer_tokens: tuple[str, ...]) -> bool:
        """The mounted app's answer (the listener asks who may send a large body)."""
        return self.app is not None and self.app.admin_presented(zt_session, bearer_tokens)

    def __call__(self, environ, start_response):
        if self.app is None:
            start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
            return [b"no app mounted"]
        return self.app(environ, start_response)


class InProcessTransport(httpx.WSGITransport):
    """WSGI transport that turns the app's "drop this connection" mark into a transport error."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if response.headers.get("content-length"):
            body = response.read()
            if len(body) < int(response.headers["content-length"]):
                raise httpx.RemoteProtocolError(
                    "peer closed connection without sending complete message body", request=request
                )
        return response


def inprocess(app, peer_certs=None, base_url: str = "https://controller.local") -> httpx.Client:
    """An httpx client that calls ``app`` directly, without sockets."""
    return httpx.Client(transport=InProcessTransport(app=PeerCertWSGI(app, peer_certs)), base_url=base_url)


@cache
def default_ssl_context() -> ssl.SSLContext:
    """The context an ``httpx.Client`` builds when given none, built once per process and shared.

    Loading the CA bundle costs ~20 ms of CPU, and httpx pays it for every client, even one that only
    speaks plain HTTP; a test run creating a client per test paid it thousands of times. Shared, so
    never changed.
    """
    return httpx.create_ssl_context()


@cache
def system_ssl_context() -> ssl.SSLContext:
    """``ssl.create_default_context()`` (this machine's CAs), built once per process; shared, so never changed."""
    return ssl.create_default_context()


def over_http(base_url: str, **kwargs) -> httpx.Client:
    """An httpx client for a controller listening at ``base_url``."""
    kwargs.setdefault("verify", default_ssl_context())
    return httpx.Client(base_url=base_url, **kwargs)
