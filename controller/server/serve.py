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
from controller.server.lifecycle import free_port  # noqa: F401 - where the harness and tests import it from

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
    http_port: int | None,
    router_port: int | None = None,
    router_advertise: str | None = None,
    ctrl_port: int | None = None,
) -> list:
    """The listeners in start order: HTTPS (both APIs), plain HTTP, the control channel, the edge router.

    ``app_of()`` gives the app once it is built (ports are checked before); a port of 0 is any free port,
    an ``http_port`` of None turns plain HTTP off, a ``router_port`` of None the router,
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
    if http_port is not None:
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
    from controller.server.tls import TLS12_CIPHERS

    advertise = ctl.config.ctrl_address.rsplit(":", 1)[0][4:] if ctl.config.ctrl_address else None
    return CtrlListener(
        host,
        port,
        pki=ctl.pki,
        find_router=ctl.routers.find_by_fingerprint,
        link_for=lambda router: remote_router_link(ctl, router),
        advertise=advertise,
        ciphers=TLS12_CIPHERS,
        **options,
    )


def raise_open_files(needed: int | None = None) -> int:
    """Raise this process's open-file limit towards its hard limit (all of it when ``needed`` is None).

    Each client connection is a descriptor: a soft limit of 1,024 (a common default) would stop a
    controller long before ``Limits.max_connections``. Returns the soft limit now in force.
    """
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if needed is None else max(soft, needed)
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    if want > soft and want != resource.RLIM_INFINITY:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            return want
        except (ValueError, OSError):
            pass
    return soft


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
    http_port: int | None,
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
    from controller.heap import SurvivorFreezer, freeze_started_heap
    from controller.server.lifecycle import Listeners, wait_for_stop
    from controller.server.memory import limit_arenas
    from controller.server.readiness import announce_ready

    limit_arenas()  # before the listeners' threads (controller.server.memory)
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
    group.pick_free_ports("--port", "--ctrl-port")  # the API's and the control channel's addresses name them
    if config.api_address.endswith(":0"):  # no --advertise port: the HTTPS port, once picked
        config.api_address = f"{config.api_address[:-2]}:{group.planned('--port')}"
    if ctrl_port is not None:
        advertise = router_advertise or ("127.0.0.1" if config.host in ("0.0.0.0", "::") else config.host)
        config.ctrl_address = f"tls:{advertise}:{group.planned('--ctrl-port')}"
    with gc_paused():  # frozen before the collector resumes: it would walk every new record once (controller.heap)
        built.append(create_app(config))
        ctl = built[0].controller
        if quickstart_policies:
            ensure_quickstart_policies(ctl.edge_router_policies, ctl.service_edge_router_policies)
        freeze_started_heap()
    raise_open_files()  # one descriptor per client connection, up to Limits.max_connections
    SurvivorFreezer().install()  # and what clients hold later leaves it after a full collection finds it alive
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
