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


def _start_tls(app, host: str, port: int):
    """The HTTPS listener for both APIs, when the PKI is available."""
    ctl = app.controller
    if ctl.pki is None:
        return None
    from controller.tls import TLSServer

    server = TLSServer(app, host, port, ctl.pki)
    server.start()
    return server


def banner(config, https_port: int | None, http_port: int | None) -> str:
    lines = ["", "Python edge controller is running."]
    if https_port:
        lines.append(f"  HTTPS (both APIs): https://{config.host}:{https_port}/edge/management/v1 and /edge/client/v1")
    if http_port:
        lines.append(f"  HTTP  (local scripts): http://{config.host}:{http_port}/edge/management/v1")
    lines.append(f"  data folder: {config.data_dir}")
    lines.append(f"  admin login: {config.admin_username} / {config.admin_password}")
    lines.append("  Ctrl-C stops it.")
    return "\n".join(lines)


def run(config, *, port: int, http_port: int, stop: threading.Event) -> int:
    """Serve until ``stop`` is set; sweep idle API sessions every 5 seconds."""
    from controller.app import create_app

    app = create_app(config)
    ctl = app.controller
    tls = _start_tls(app, config.host, port)
    http_port = http_port if tls is not None else (http_port or port)
    http = ThreadedServer(app, config.host, http_port).start() if http_port else None
    print(banner(config, tls.port if tls else None, http.port if http else None), flush=True)
    try:
        while not stop.wait(5):
            ctl.api_sessions.sweep()
    finally:
        for server in (tls, http):
            if server is not None:
                server.stop()
        ctl.close()
    return 0
