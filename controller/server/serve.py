"""Serving the app: plain HTTP and the TLS listener, both on ``controller.server.httpserver``.

``ThreadedServer`` (plain HTTP) and ``controller.server.tls.TLSServer`` (HTTPS) share
one API: constructing binds the port (a busy port raises ``OSError`` there),
``start()`` serves from a daemon thread and returns once accepting, ``stop()``
closes everything within about two seconds and is idempotent. ``listeners``
describes them for ``controller.server.lifecycle`` (ports checked, all bound before
any serves, all stopped together); ``run`` is what the command line starts.
"""

from __future__ import annotations

import logging
import threading
from functools import partial
from pathlib import Path

from controller.server.httpserver import HTTPServer, Limits  # noqa: F401 - Limits: the deadlines callers may pass

log = logging.getLogger("controller.server.serve")


def controller_limits(app=None, **options) -> Limits:
    """``Limits`` for the controller's listeners: the app names the paths taking larger bodies (the import
    extension takes a whole network as one body) as ``app.large_bodies``.

    Only a request carrying an admin's session (``app.admin_presented``, asked per request) may send that large
    a body; any other is answered before a byte of it is buffered.
    """
    large = tuple(getattr(app, "large_bodies", ()))
    gate = None if app is None else partial(_admin_headers, app)
    return Limits(large_bodies=large, large_body_gate=gate, **options)


def _admin_headers(app, headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether raw request headers carry a live admin session (``zt-session`` or a bearer access token)."""
    admin_presented = getattr(app, "admin_presented", None)
    if admin_presented is None:
        return False
    zt_session, bearer = None, []
    for name, value in headers:
        name = name.lower()
        if name == b"zt-session":
            zt_session = value.decode("latin-1").strip()
        elif name == b"authorization" and value[:7].lower() == b"bearer ":
            bearer.append(value[7:].decode("latin-1").strip())
    return admin_presented(zt_session, tuple(bearer))


class ThreadedServer(HTTPServer):
    """The plain-HTTP listener (event loop for I/O, ``threads`` workers for the app)."""

    def __init__(self, app, host: str = "127.0.0.1", port: int = 0, *, limits: Limits | None = None, **options):
        super().__init__(app, host, port, limits=limits or controller_limits(app), **options)


def listeners(
    app_of,
    host: str,
    *,
    port: int,
    http_port: int,
    router_port: int | None = None,
    router_advertise: str | None = None,
    ctrl_port: int | None = None,
) -> list:
    """The listeners in start order: HTTPS (both APIs), plain HTTP, the control channel, the edge router.

    ``app_of()`` gives the app once it is built (ports are checked before); an
    ``http_port`` of 0 turns plain HTTP off, a ``router_port`` of None the router,
    a ``ctrl_port`` of None the control channel. Each ``bind`` returns a server not yet serving.
    """
    from controller.server.lifecycle import Listener
    from controller.server.tls import TLSServer

    out = [
        Listener(
            "HTTPS",
            "--port",
            port,
            lambda bound: TLSServer(app_of(), host, bound, app_of().controller.pki, limits=controller_limits(app_of())),
        )
    ]
    if http_port:
        out.append(Listener("HTTP", "--http-port", http_port, lambda bound: ThreadedServer(app_of(), host, bound)))
    if ctrl_port is not None:
        out.append(
            Listener(
                "control channel",
                "--ctrl-port",
                ctrl_port,
                lambda bound: ctrl_listener(app_of().controller, host, bound),
            )
        )
    if router_port is not None:
        out.append(
            Listener(
                "router",
                "--router-port",
                router_port,
                lambda bound: edge_router(app_of().controller, host, bound, router_advertise),
            )
        )
    return out


def edge_router(ctl, host: str, port: int, advertise: str | None = None):
    """The edge router of this controller, not started (composition root: the controller never imports it)."""
    from controller.app import router_link
    from router import EdgeRouter

    advertise = advertise or ("127.0.0.1" if host in ("0.0.0.0", "::") else host)
    link = router_link(ctl, hostnames=(advertise, *ctl.config.hostnames))
    return EdgeRouter(link, host, port, advertise=advertise)


def ctrl_listener(ctl, host: str, port: int, **options):
    """The control channel listener for routers running as their own processes (not started).

    Composition root: each connected router gets a ``RouterLink`` built like the embedded one's.
    """
    from controller.app import remote_router_link
    from controller.ctrl.listener import CtrlListener

    advertise = ctl.config.ctrl_address.rsplit(":", 1)[0][4:] if ctl.config.ctrl_address else None
    return CtrlListener(
        host,
        port,
        pki=ctl.pki,
        find_router=ctl.routers.find_by_fingerprint,
        link_for=lambda router: remote_router_link(ctl, router),
        advertise=advertise,
        **options,
    )


def free_port(host: str = "127.0.0.1") -> int:
    """A port free right now (the control channel's address goes into enrollment JWTs before it binds)."""
    import socket

    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def start_router(ctl, host: str, port: int, advertise: str | None = None):
    """The edge router of this controller, started."""
    return edge_router(ctl, host, port, advertise).start()


def banner(
    config,
    https_port: int | None,
    http_port: int | None,
    router=None,
    *,
    temporary: bool = False,
    identities: list | None = None,
) -> str:
    """What a person needs to start using the controller: addresses, files, the login."""
    lines = ["", "Python edge controller is running."]
    if https_port:
        lines.append(f"  HTTPS (both APIs): https://{config.host}:{https_port}/edge/management/v1 and /edge/client/v1")
    if https_port and getattr(config, "console_dir", None) is not None:
        lines.append(f"  console: https://{config.host}:{https_port}/zac/  (from {config.console_dir})")
    if http_port:
        lines.append(f"  HTTP  (local scripts): http://{config.host}:{http_port}/edge/management/v1")
    if router is not None:
        lines.append(f"  edge router: {router.url}")
    if config.ctrl_address:
        lines.append(f"  control channel (routers): {config.ctrl_address}")
    lines.append(f"  data folder: {config.data_dir}" + ("  (temporary: removed on exit)" if temporary else ""))
    if config.data_dir is not None:
        lines.append(f"  CA bundle: {Path(config.data_dir) / 'pki' / 'root-ca.cert.pem'}  (clients: --ca FILE)")
    for path in identities or []:
        lines.append(f"  identity: {path}")
    # NOTE(cli): a folder made earlier keeps the password it was made with: the caller says so in ``admin_login``
    lines.append(
        f"  admin login: {config.extra.get('admin_login') or f'{config.admin_username} / {config.admin_password}'}"
    )
    lines.append("  Ctrl-C stops it.")
    return "\n".join(lines)


def run(
    config,
    *,
    port: int,
    http_port: int,
    stop: threading.Event,
    router_port: int | None = None,
    quickstart_policies: bool = False,
    router_advertise: str | None = None,
    temporary: bool = False,
    ctrl_port: int | None = None,
    ready_file: str | None = None,
) -> int:
    """Check every port, build the app, start every listener, serve until ``stop`` is set.

    Any listener that cannot start stops the others and raises ``ListenerError``. Once the
    admin API serves and the embedded router is online, one ready line is printed and, with
    ``ready_file``, the file is written (``controller.server.readiness``).
    """
    from controller.app import create_app
    from controller.bootstrap import ensure_quickstart_policies
    from controller.gc_pause import gc_paused
    from controller.heap import freeze_started_heap
    from controller.server.lifecycle import Listeners, wait_for_stop
    from controller.server.readiness import announce_ready

    built: list = []
    group = Listeners(
        config.host,
        listeners(
            lambda: built[0],
            config.host,
            port=port,
            http_port=http_port,
            router_port=router_port,
            router_advertise=router_advertise,
            ctrl_port=ctrl_port,
        ),
    )
    group.check()
    if ctrl_port is not None:
        ctrl_port = ctrl_port or free_port(config.host)
        group.listeners[[listener.option for listener in group.listeners].index("--ctrl-port")].port = ctrl_port
        advertise = router_advertise or ("127.0.0.1" if config.host in ("0.0.0.0", "::") else config.host)
        config.ctrl_address = f"tls:{advertise}:{ctrl_port}"
    with gc_paused():  # frozen before the collector resumes: it would walk every new record once (controller.heap)
        built.append(create_app(config))
        ctl = built[0].controller
        if quickstart_policies:
            ensure_quickstart_policies(ctl.edge_router_policies, ctl.service_edge_router_policies)
        freeze_started_heap()
    try:
        group.start()
        router = next((server for listener, server in group.servers if listener.name == "router"), None)
        print(banner(config, group.port("HTTPS"), group.port("HTTP"), router, temporary=temporary), flush=True)
        announce_ready(config, group, router, ready_file)
        wait_for_stop(stop, ctl.sweep)
    finally:
        stopped = group.stop()
        ctl.close()
    return 0 if stopped else 1
