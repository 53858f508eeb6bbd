"""Serving the app: plain HTTP and the TLS listener, both on ``controller.httpserver``.

``ThreadedServer`` (plain HTTP) and ``controller.tls.TLSServer`` (HTTPS) share
one API: constructing binds the port (a busy port raises ``OSError`` there),
``start()`` serves from a daemon thread and returns once accepting, ``stop()``
closes everything within about two seconds and is idempotent. ``run`` is what
the command line starts.
"""
from __future__ import annotations

import logging
import threading

from controller.httpserver import HTTPServer, Limits  # noqa: F401 - Limits: the deadlines callers may pass

log = logging.getLogger("controller.serve")


class ThreadedServer(HTTPServer):
    """The plain-HTTP listener (event loop for I/O, ``threads`` workers for the app)."""


def bind_listeners(app, host: str, port: int, http_port: int) -> list[HTTPServer]:
    """Every listener bound and none serving yet: a busy port raises ``OSError`` before anything serves.

    HTTPS on ``port`` when the app has a PKI, and plain HTTP on ``http_port``
    (or on ``port`` when there is no HTTPS listener); ``0`` picks a free port.
    """
    servers: list[HTTPServer] = []
    try:
        if app.controller.pki is not None:
            from controller.tls import TLSServer

            servers.append(TLSServer(app, host, port, app.controller.pki))
        if not servers:
            servers.append(ThreadedServer(app, host, http_port or port))
        elif http_port:
            servers.append(ThreadedServer(app, host, http_port))
    except OSError:
        for server in servers:
            server.stop()
        raise
    return servers


def _start_tls(app, host: str, port: int):
    """The HTTPS listener, started (``harness/cli.py`` still uses it; prefer ``bind_listeners``)."""
    if app.controller.pki is None:
        return None
    from controller.tls import TLSServer

    return TLSServer(app, host, port, app.controller.pki).start()


def start_router(ctl, host: str, port: int, advertise: str | None = None):
    """The edge router of this controller (composition root: the controller never imports it)."""
    from controller.router_link import RouterLink
    from router import EdgeRouter

    advertise = advertise or ("127.0.0.1" if host in ("0.0.0.0", "::") else host)
    link = RouterLink(ctl, hostnames=(advertise, *ctl.config.hostnames))
    return EdgeRouter(link, host, port, advertise=advertise).start()


def banner(config, https_port: int | None, http_port: int | None, router=None) -> str:
    lines = ["", "Python edge controller is running."]
    if https_port:
        lines.append(f"  HTTPS (both APIs): https://{config.host}:{https_port}/edge/management/v1 and /edge/client/v1")
    if http_port:
        lines.append(f"  HTTP  (local scripts): http://{config.host}:{http_port}/edge/management/v1")
    if router is not None:
        lines.append(f"  edge router: {router.url}")
    lines.append(f"  data folder: {config.data_dir}")
    lines.append(f"  admin login: {config.admin_username} / {config.admin_password}")
    lines.append("  Ctrl-C stops it.")
    return "\n".join(lines)


def run(config, *, port: int, http_port: int, stop: threading.Event, router_port: int | None = None,
        quickstart_policies: bool = False, router_advertise: str | None = None) -> int:
    """Serve until ``stop`` is set; sweep idle API sessions every 5 seconds."""
    from controller.app import create_app
    from controller.bootstrap import ensure_quickstart_policies

    app = create_app(config)
    ctl = app.controller
    if quickstart_policies:
        ensure_quickstart_policies(ctl)
    servers = bind_listeners(app, config.host, port, http_port)
    try:
        for server in servers:
            server.start()
        ports = {server.scheme: server.port for server in servers}
        router = start_router(ctl, config.host, router_port, router_advertise) if router_port is not None else None
        if router is not None:
            servers.insert(0, router)  # stopped first: its terminators go while the store is open
        print(banner(config, ports.get("https"), ports.get("http"), router), flush=True)
        while not stop.wait(5):
            ctl.api_sessions.sweep()
    finally:
        for server in servers:
            server.stop()
        ctl.close()
    return 0
