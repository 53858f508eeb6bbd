"""``ziti edge quickstart``: a controller and its edge router in this process, as the real quickstart.

It prints the real command's lines (a suite waits for ``controller and router
started``), creates the two quickstart policies (``all-endpoints-public-routers``,
``all-routers-all-services``) over the HTTPS API, logs the command in (the
saved login later ``ziti edge ...`` calls use), and on SIGTERM/SIGINT stops
the listeners and removes a temporary home (``--home`` is kept).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from controller.config import is_loopback
from controller.console import host_name, port_number
from harness.ziti import session
from harness.ziti.common import bool_flag

RULE = "=" * 87
QUICKSTART_POLICIES = (
    (
        "/edge-router-policies",
        {
            "name": "all-endpoints-public-routers",
            "edgeRouterRoles": ["#public"],
            "identityRoles": ["#all"],
            "semantic": "AllOf",
        },
    ),
    (
        "/service-edge-router-policies",
        {
            "name": "all-routers-all-services",
            "edgeRouterRoles": ["#all"],
            "serviceRoles": ["#all"],
            "semantic": "AllOf",
        },
    ),
)


#: the controller's port options -> this command's (None: picked free, no option sets it)
OPTIONS = {"--port": "--ctrl-port", "--ctrl-port": None}


def _port(value: int) -> int:
    from harness.processes.server import free_port

    return value if value else free_port()


def cmd_quickstart(args) -> int:
    if args.home:
        home, temporary = Path(os.path.expanduser(args.home)), False
        print(f"permanent --home '{home}' will not be removed on exit", flush=True)
    else:
        home, temporary = Path(tempfile.mkdtemp(prefix="quickstart")), True
        print(f"temporary --home '{home}'", flush=True)
    from harness.processes.files import private_folder

    private_folder(home)  # APPSEC(secrets-at-rest): the PKI and the store live here, whatever the umask
    try:
        return _run(args, home, temporary)
    finally:
        remove = temporary and not args.configure_and_exit
        if remove:  # before the last line: a reader that already went away must not keep the folder
            shutil.rmtree(home, ignore_errors=True)
        _say(f"Removing temp directory at: {home}" if remove else f"Environment left intact at: {home}")


def _say(line: str) -> None:
    try:
        print(line, flush=True)
    except BrokenPipeError:  # the suite stopped reading our output: the rest goes nowhere, quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


@dataclass(frozen=True)
class Addresses:
    """Where a quickstart member listens and what it advertises, from the command's options."""

    address: str
    router_address: str
    bind: str
    ctrl_port: int
    router_port: int | None
    #: routers of their own (`ziti edge create edge-router R -o r.jwt`, `ziti-router enroll r.jwt`) reach the
    #: controller's control channel; the real quickstart serves it on the API port, this one beside it
    router_ctrl_port: int
    username: str
    password: str

    @classmethod
    def of(cls, args) -> Addresses:
        address = args.ctrl_address or "127.0.0.1"
        loopback = is_loopback(address)
        return cls(
            address=address,
            router_address=args.router_address or address,
            bind=address if _is_ip(address) and loopback else ("127.0.0.1" if loopback else "0.0.0.0"),
            ctrl_port=_port(args.ctrl_port),
            router_port=None if args.no_router else _port(args.router_port),
            router_ctrl_port=_port(0),
            username=args.username or "admin",
            password=args.password or "admin",
        )

    @property
    def hostnames(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(("localhost", self.address, self.router_address)))


def _run(args, home: Path, temporary: bool) -> int:
    from controller.config import Config

    at = Addresses.of(args)
    config = Config(
        data_dir=home / "db",
        host=at.bind,
        api_address=f"{at.address}:{at.ctrl_port}",
        hostnames=at.hostnames,
        admin_username=at.username,
        admin_password=at.password,
        trust_domain="quickstart",
        ctrl_address=f"tls:{at.address}:{at.router_ctrl_port}",
    )
    ca_file = config.data_dir / "pki" / "root-ca.cert.pem"

    def saved(path) -> None:
        print(f"Saving identity '{session.identity_name(session.load_config(), args.cli_identity)}' to {path}")
        print(f"The controller's CA bundle (clients: --ca FILE): {ca_file}", flush=True)

    def ready(ports) -> None:
        print(
            f"Routers of their own enroll against the control channel at tls:{at.address}:{at.router_ctrl_port}",
            flush=True,
        )

    return serve_member(args, home, at, config, ca_file=ca_file, saved=saved, ready=ready)


def serve_member(args, home: Path, at: Addresses, config, *, ca_file: Path, saved, ready=None, prepare=None, banner=()):
    """Serve one quickstart controller (and its router) until a signal: listeners checked before anything is
    made, the controller built, ``prepare()`` run, the command logged in (``saved(path)`` says so), the real
    ready lines printed (``ready(group)`` adds its own before them, ``banner`` lines after them)."""
    from controller.embedded import EmbeddedController
    from controller.server.lifecycle import Listeners, stop_on_signals, wait_for_stop
    from controller.server.serve import listeners

    built: list = []
    served = listeners(
        lambda: built[0],
        at.bind,
        port=at.ctrl_port,
        http_port=None,
        router_port=at.router_port,
        router_advertise=at.router_address,
        ctrl_port=at.router_ctrl_port,
    )
    for listener in served:  # a port in use names this command's option (the control channel's port has none)
        listener.option = OPTIONS.get(listener.option, listener.option)
    group = Listeners(at.bind, served)
    stop = threading.Event()
    stop_on_signals(stop)
    group.check()
    print("Starting controller...", flush=True)
    embedded = EmbeddedController(config)
    built.append(embedded.app)
    try:
        if prepare is not None:
            prepare()
        group.start()
        print("Controller running...", flush=True)
        url = f"https://{at.address}:{at.ctrl_port}"
        saved(_login_and_configure(url, str(ca_file), at.username, at.password, args.cli_identity))
        if at.router_port is not None:
            print(f"Router is available on {at.router_address}:{group.port('router')}", flush=True)
        if ready is not None:
            ready(group)
        print(flush=True)
        print(RULE)
        print("controller and router started.")
        print(f"    controller located at  : {at.address}:{at.ctrl_port}")
        print(f"    router located at      : {at.router_address}:{group.port('router') or args.router_port}")
        print(f"    config dir located at  : {home}")
        print(f"    configured trust domain: {config.trust_domain}")
        print(f"    instance pid           : {os.getpid()}")
        for line in banner:
            print(line)
        print(RULE, flush=True)
        if args.configure_and_exit:
            print("configure-and-exit set to true, closing router and controller", flush=True)
        else:
            wait_for_stop(stop, embedded.sweep)
            _say("Signal to shutdown received")
    finally:
        group.stop()
        embedded.close()
    return 0


def _is_ip(text: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _login_and_configure(url: str, ca_file: str, username: str, password: str, cli_identity) -> Path:
    """Log in as the admin over HTTPS, save the login, create the quickstart policies when missing."""
    from harness.client import ZitiClient

    with ZitiClient.connect(url, ca=ca_file, timeout=30.0) as client:
        token = client.management.call(
            "authenticate", method="password", body={"username": username, "password": password}
        )["token"]
        client.token = token
        for path, body in QUICKSTART_POLICIES:
            literal = '"' + body["name"] + '"'
            if not client.mgmt_ok("GET", path, params={"filter": f"name = {literal}"}):
                client.mgmt_ok("POST", path, json=body)
    from urllib.parse import urlsplit

    cached = session.cache_ca(urlsplit(url).hostname, Path(ca_file).read_text())
    return session.save_login(url + session.MANAGEMENT_PATH, username, token, str(cached), cli_identity=cli_identity)


def register(edge_sub) -> None:
    p = edge_sub.add_parser(
        "quickstart",
        help="runs a Controller and Router in quickstart mode",
        description="runs a Controller and Router in quickstart mode with a temporary directory; "
        "suitable for testing and development",
    )
    p.add_argument("-u", "--username", default=None, help="admin username, default: admin")
    p.add_argument("-p", "--password", default=None, help="admin password, default: admin")
    p.add_argument("--home", default=None, help="permanent directory (default: a temporary one, removed on exit)")
    p.add_argument(
        "--ctrl-address", type=host_name, default=None, help="the advertised address of the API (default 127.0.0.1)"
    )
    p.add_argument(
        "--ctrl-port", type=port_number, default=1280, help="the port of the API (default 1280; 0 = any free)"
    )
    p.add_argument(
        "--router-address",
        type=host_name,
        default=None,
        help="the advertised address of the router (default ctrl-address)",
    )
    p.add_argument(
        "--router-port", type=port_number, default=3022, help="the port of the router (default 3022; 0 = any free)"
    )
    bool_flag(p, "--no-router", dest="no_router", help="specifies the quickstart should not start a router")
    bool_flag(p, "--configure-and-exit", dest="configure_and_exit", help="Configures everything and then exits")
    p.add_argument("--trust-domain", default=None, help="accepted for compatibility (always quickstart)")
    p.add_argument("--instance-id", default=None, help="accepted for compatibility")
    bool_flag(p, "--verbose", dest="verbose", help="Show additional output.")
    p.add_argument("-i", "--cli-identity", default=None, help="the saved login to write (default: default)")
    p.set_defaults(func=cmd_quickstart)
    from harness.ziti import quickstart_ha

    quickstart_ha.register(p)  # ``ha`` and ``join``: cluster members
