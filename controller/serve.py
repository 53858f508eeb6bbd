"""Serving the app: plain HTTP and the TLS listener, both on ``controller.httpserver``.

``ThreadedServer`` (plain HTTP) and ``controller.tls.TLSServer`` (HTTPS) share
one API: constructing binds the port (a busy port raises ``OSError`` there),
``start()`` serves from a daemon thread and returns once accepting, ``stop()``
closes everything within about two seconds and is idempotent. ``listeners``
describes them for ``controller.lifecycle`` (ports checked, all bound before
any serves, all stopped together); ``run`` is what the command line starts.
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path

from controller.httpserver import HTTPServer, Limits  # noqa: F401 - Limits: the deadlines callers may pass

log = logging.getLogger("controller.serve")


class ThreadedServer(HTTPServer):
    """The plain-HTTP listener (event loop for I/O, ``threads`` workers for the app)."""


def listeners(app_of, host: str, *, port: int, http_port: int) -> list:
    """The controller's listeners in start order: HTTPS (both APIs), then plain HTTP.

    ``app_of()`` gives the app once it is built (ports are checked before); an
    ``http_port`` of 0 turns plain HTTP off. Each ``bind`` binds without serving.
    """
    from controller.lifecycle import Listener
    from controller.tls import TLSServer

    out = [Listener("HTTPS", "--port", port, lambda bound: TLSServer(app_of(), host, bound, app_of().controller.pki))]
    if http_port:
        out.append(Listener("HTTP", "--http-port", http_port, lambda bound: ThreadedServer(app_of(), host, bound)))
    return out


def banner(config, https_port: int | None, http_port: int | None, *, temporary: bool = False,
           identities: list | None = None) -> str:
    """What a person needs to start using the controller: addresses, files, the login."""
    lines = ["", "Python edge controller is running."]
    if https_port:
        lines.append(f"  HTTPS (both APIs): https://{config.host}:{https_port}/edge/management/v1 and /edge/client/v1")
    if http_port:
        lines.append(f"  HTTP  (local scripts): http://{config.host}:{http_port}/edge/management/v1")
    lines.append(f"  data folder: {config.data_dir}" + ("  (temporary: removed on exit)" if temporary else ""))
    if config.data_dir is not None:
        lines.append(f"  CA bundle: {Path(config.data_dir) / 'pki' / 'root-ca.cert.pem'}  (clients: --ca FILE)")
    for path in identities or []:
        lines.append(f"  identity: {path}")
    lines.append(f"  admin login: {config.admin_username} / {config.admin_password}")
    lines.append("  Ctrl-C stops it.")
    return "\n".join(lines)


def run(config, *, port: int, http_port: int, stop: threading.Event, extra: list | None = None,
        temporary: bool = False) -> int:
    """Check every port, build the app, start every listener, serve until ``stop`` is set.

    ``extra`` listeners (the router) start after HTTPS and HTTP. Any listener
    that cannot start stops the others and raises ``ListenerError``.
    """
    from controller.app import create_app
    from controller.lifecycle import Listeners, wait_for_stop

    built: list = []
    group = Listeners(config.host, [*listeners(lambda: built[0], config.host, port=port, http_port=http_port),
                                    *(extra or [])])
    group.check()
    built.append(create_app(config))
    ctl = built[0].controller
    try:
        group.start()
        print(banner(config, group.port("HTTPS"), group.port("HTTP"), temporary=temporary), flush=True)
        wait_for_stop(stop, ctl.api_sessions.sweep)
    finally:
        stopped = group.stop()
        ctl.close()
    return 0 if stopped else 1
