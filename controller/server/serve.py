"""Serving the app: plain HTTP and the TLS listener, both on ``controller.server.httpserver``.

``ThreadedServer`` (plain HTTP) and ``controller.server.tls.TLSServer`` (HTTPS) share
one API: constructing binds the port (a busy port raises ``OSError`` there),
``start()`` serves from a daemon thread and returns once accepting, ``stop()``
closes everything within about two seconds and is idempotent. ``listeners``
describes them for ``controller.server.lifecycle`` (ports checked, all bound before
any serves, all stopped together); ``controller.embedded.serve`` starts them for the command line.
"""

from __future__ import annotations

import logging
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


def check_raft_port(raft_address: str) -> None:
    """``ListenerError`` when a member's raft port cannot be bound: PySyncObj would retry binding in silence, and
    the member would wait for a leader until it gave up."""
    from controller.server.lifecycle import Listener, ListenerError, bind_problem

    host, _, port = raft_address.rpartition(":")
    reason = bind_problem(host.strip("[]"), int(port))
    if reason:
        raise ListenerError(Listener("raft", "--raft-port", int(port), lambda bound: None), host, reason)


def edge_router(ctl, host: str, port: int, advertise: str | None = None):
    """The edge router of this controller, not started (composition root: the controller never imports it)."""
    from controller.app import router_link
    from router import EdgeRouter

    advertise = advertise or ("127.0.0.1" if host in ("0.0.0.0", "::") else host)
    link = router_link(ctl, hostnames=(advertise, *ctl.config.hostnames))
    if ctl.cluster is None or not ctl.config.ctrl_address:
        return EdgeRouter(link, host, port, advertise=advertise)
    return cluster_router(link, ctl.config.ctrl_address, host, port, advertise)


def cluster_router(link, ctrl_address: str, host: str, port: int, advertise: str):
    """A cluster member's embedded router: in-process to its own member, over the control channel to every other
    one the members list (as a router process connects to every member)."""
    from controller.ctrl.local_member import LocalMember
    from router import EdgeRouter
    from router.members import ControllerMembers

    credentials = link.credentials()
    members = ControllerMembers(
        [],
        cert_pem=credentials["client_cert_chain_pem"],
        key_pem=credentials["client_key_pem"],
        server_cert_pem=credentials["cert_chain_pem"],
        ca_pem=credentials["ca_pem"],
        local=LocalMember(link, ctrl_address, credentials),
    )
    router = EdgeRouter(members, host, port, advertise=advertise)
    stop = router.stop

    def stop_and_close() -> None:  # the channels to the other members end with the router
        stop()
        members.close()

    router.stop = stop_and_close
    return router


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
        find_router=ctl.routing.routers.find_by_fingerprint,
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
