"""``ziti-harness``: start a local network, apply, export, diff, inspect, run scenarios.

* ``ziti-harness up [network.yaml]``: a controller and its edge router with the quickstart
  policies and the network applied (temporary data folder unless ``--data``), enrollment
  JWTs written, the admin login printed; the file's ``process: true`` routers run as their
  own processes (control channel on a free port), online and linked before it says so;
* ``ziti-harness apply network.yaml [--dry-run] [--prune] [--force]``, ``export``, ``diff a b``;
* ``ziti-harness test network.yaml`` (the file's access tests against a live controller);
* ``ziti-harness list|show|delete KIND [NAME]``, ``explain IDENTITY SERVICE``,
  ``policy-advisor identities|services``, ``generate SHAPE``;
* ``ziti-harness scenario scenario.yaml`` (in-process without ``--url``).

Each subcommand is a ``register(sub, common)`` function in :data:`SUBCOMMANDS`;
adding one is a module and one line there.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from controller.config import VERSION
from controller.console import (
    EXIT_CODES,
    FAILED,
    INTERRUPTED,
    LOCAL,
    UNREACHABLE,
    USAGE,
    CliError,
    OneLineParser,
    check_data_folder,
    controller_errors,
    controller_url,
    exit_process,
    port_number,
    run,
    without_unused_imports,
)
from harness.extra import extra_errors

if TYPE_CHECKING:  # httpx is imported by the commands that connect, not by --help or a usage mistake
    from harness.client import ZitiClient

DEFAULT_URL = "http://127.0.0.1:1281"


# -- talking to a controller -------------------------------------------------------


def client_for(args) -> ZitiClient:
    """A client of ``--url`` (not logged in), trusting ``--ca`` for HTTPS."""
    from harness.client import ZitiClient

    if args.url is None and getattr(args, "url_fallback", None):
        args.url = args.url_fallback
    return ZitiClient.connect(args.url, ca=args.ca, verify=not args.insecure)


def saved_login(args) -> ZitiClient | None:
    """Without ``--url``, ``--user`` and ``--password``: a client carrying the ``ziti`` command's saved login
    (``ziti edge login`` or ``ziti edge quickstart``: URL, CA and session), None when there is none."""
    from harness.ziti import session

    explicit = args.url is not None or args.user or args.password or args.ca or args.insecure
    if explicit or not getattr(args, "url_fallback", None):
        return None
    config = session.load_config()
    login = config["edgeIdentities"].get(session.identity_name(config))
    if not (login and login.get("url") and login.get("token")):
        return None
    client = session.saved_client()
    args.url = session.base_url(login["url"])
    print(f"using the login `ziti` saved in {session.config_file()}: {args.url}", file=sys.stderr, flush=True)
    return client


def connect(args) -> ZitiClient:
    """A client of ``--url`` logged in as ``--user``; CliError when the login is refused.

    Without ``--url`` (and without ``--user``/``--password``) the ``ziti`` command's saved login is used
    when there is one (``ziti edge login``, ``ziti edge quickstart``), else ``http://127.0.0.1:1281`` as admin.
    """
    from harness.client import ApiError

    client = saved_login(args)
    if client is not None:
        try:
            client.management.call("getCurrentAPISession")
        except ApiError as ex:
            client.close()
            raise CliError(
                f"the login saved by `ziti edge login` for {args.url} was refused ({ex.code}): log in again "
                "with `ziti edge login`, or give --url, --user and --password",
                UNREACHABLE,
            ) from ex
        return client
    client = client_for(args)
    try:
        client.login(args.user or "admin", args.password or "admin")
    except ApiError as ex:
        client.close()
        if ex.code is None:  # not the controller's error envelope: another server, or HTTP sent to the HTTPS port
            raise CliError(
                f"{args.url} answered {ex.status} without a controller's error envelope: is it a controller's "
                f"address? (the HTTPS port needs https://, the plain HTTP port http://)",
                UNREACHABLE,
            ) from ex
        reason = ex.code if ex.status == 401 else (ex.cause or {}).get("reason", ex.message)
        raise CliError(
            f"the controller at {args.url} refused the login of {args.user or 'admin'!r} ({reason}): check --user and "
            "--password",
            UNREACHABLE,
        ) from ex
    return client


def harness_errors(ex: BaseException) -> CliError | None:
    """One line for what goes wrong talking to a controller or reading a file."""
    import httpx

    from harness.client import ApiError
    from harness.network import NetworkError
    from harness.network.check import ApplyInterrupted, NetworkProblems

    if isinstance(ex, httpx.ConnectError):
        return _connect_error(ex)
    if isinstance(ex, httpx.RemoteProtocolError):
        return CliError(
            f"{_url(ex)} did not answer in HTTP: if it is the controller's HTTPS port, write https:// "
            "(the plain HTTP port is 1281 by default)",
            UNREACHABLE,
        )
    if isinstance(ex, httpx.ReadError) and _url(ex).startswith("http://"):
        # the TLS port resets a plain HTTP request about as often as it answers it with garbage
        return CliError(
            f"{_url(ex)} closed the connection without an HTTP answer: if it is the controller's HTTPS port, "
            "write https:// (the plain HTTP port is 1281 by default)",
            UNREACHABLE,
        )
    if isinstance(ex, httpx.UnsupportedProtocol):
        return CliError(f"{ex}: write the URL with http:// or https://", USAGE)
    if isinstance(ex, httpx.TimeoutException):
        return CliError(
            f"the controller at {_url(ex)} did not answer in time; is it overloaded or stopped?", UNREACHABLE
        )
    if isinstance(ex, ApplyInterrupted):
        return CliError(str(ex), INTERRUPTED if isinstance(ex.cause, KeyboardInterrupt) else FAILED)
    if isinstance(ex, (NetworkProblems, NetworkError)):
        return CliError(str(ex), USAGE)
    if isinstance(ex, ApiError):
        return CliError(
            f"the controller answered {ex.status} {ex.code}: {ex.message}" + (f" ({ex.cause})" if ex.cause else ""),
            FAILED,
        )
    if isinstance(ex, FileNotFoundError):
        return CliError(f"no such file: {ex.filename}", USAGE)
    return controller_errors(ex)


def _connect_error(ex) -> CliError:
    url = _url(ex)
    if "CERTIFICATE_VERIFY_FAILED" in str(ex):
        return CliError(
            f"the TLS certificate of {url} is not signed by a CA this command trusts: pass the "
            "controller's CA bundle with --ca FILE (the controller names it at start, e.g. "
            "DATA/pki/root-ca.cert.pem)",
            UNREACHABLE,
        )
    return CliError(
        f"nothing is listening at {url}: start a controller (ziti-controller or ziti-harness up) "
        "or give its address with --url",
        UNREACHABLE,
    )


def _url(ex) -> str:
    try:
        request = ex.request
    except RuntimeError:
        return "the controller"
    return f"{request.url.scheme}://{request.url.netloc.decode()}"


# -- up ----------------------------------------------------------------------------


def write_enrollment_jwts(client: ZitiClient, out: Path) -> list[Path]:
    """Write ``<identity name>.jwt`` for every identity with a pending ott enrollment."""
    from harness.processes.files import private_folder, write_private

    private_folder(out)  # APPSEC(secrets-at-rest): an enrollment JWT is a credential until used
    written = []
    for identity in client.management.iterate("listIdentities", page_size=500):
        ott = (identity.get("enrollment") or {}).get("ott")
        if ott and ott.get("jwt"):
            path = out / f"{identity['name']}.jwt"
            write_private(path, ott["jwt"])
            written.append(path)
    return written


def cmd_up(args) -> int:
    from controller.config import Config
    from harness.network.check import check_file
    from harness.processes.server import free_port

    if args.network:
        print(f"reading {args.network}", file=sys.stderr, flush=True)
    network = check_file(args.network) if args.network else None
    temporary = args.data is None
    if not temporary:
        check_data_folder(Path(args.data))
    data = Path(tempfile.mkdtemp(prefix="ziti-harness-")) if temporary else Path(args.data)
    if network is not None and network.controllers > 1:
        try:
            return _serve_cluster(args, network, data, temporary)
        finally:
            if temporary:
                shutil.rmtree(data, ignore_errors=True)
    https_port = args.port or free_port()  # the JWTs name the HTTPS address: chosen before the app is built
    config = Config(data_dir=data, api_address=f"127.0.0.1:{https_port}", simulation=args.simulation)
    if (data / "db").exists():  # made earlier: the admin keeps the password it was made with
        config.extra["admin_login"] = f"{config.admin_username} / the password given when this folder was made"
    try:
        return _serve_up(args, config, network, https_port, args.http_port or free_port(), temporary)
    finally:
        if temporary:
            shutil.rmtree(data, ignore_errors=True)


def _serve_up(args, config, network, https_port: int, http_port: int, temporary: bool) -> int:
    from controller.embedded import EmbeddedController
    from controller.heap import freeze_started_heap
    from controller.server.lifecycle import Listeners, stop_on_signals, wait_for_stop
    from controller.server.serve import banner, free_port, listeners
    from harness.client import ZitiClient
    from harness.network import apply

    built: list = []
    router_port = None if args.no_router else args.router_port
    processes = network.process_routers() if network is not None else []
    ctrl_port = args.ctrl_port if args.ctrl_port is not None else (_kept_ctrl_port(config) if processes else None)
    group = Listeners(
        config.host,
        listeners(
            lambda: built[0],
            config.host,
            port=https_port,
            http_port=http_port,
            router_port=router_port,
            ctrl_port=ctrl_port,
        ),
    )
    group.check()  # before anything is applied or written
    if ctrl_port is not None:  # the routers' enrollment JWTs name it: chosen before the app is built
        ctrl_port = ctrl_port or free_port(config.host)
        group.listeners[[listener.option for listener in group.listeners].index("--ctrl-port")].port = ctrl_port
        advertise = "127.0.0.1" if config.host in ("0.0.0.0", "::") else config.host
        config.ctrl_address = f"tls:{advertise}:{ctrl_port}"
        if processes:  # routers enrolled in this folder dial this port again at the next up
            from harness.processes.files import private_folder, write_private

            write_private(private_folder(config.data_dir / "routers") / "ctrl-port", f"{ctrl_port}\n")
    embedded = EmbeddedController(config, quickstart_policies=True)
    built.append(app := embedded.app)
    routers = None
    try:
        with ZitiClient.in_process(app) as client:
            client.login(config.admin_username, config.admin_password)
            if network is not None:
                steps = apply(client, network, progress=True)
                print(f"applied {args.network}: {len(steps)} change(s)")
            jwts = write_enrollment_jwts(client, Path(args.out) if args.out else config.data_dir / "identities")
        freeze_started_heap()
        group.start()
        router = next((server for listener, server in group.servers if listener.name == "router"), None)
        stop = threading.Event()
        stop_on_signals(stop)  # before the banner: whoever reads it may stop the controller at once
        print(
            banner(config, group.port("HTTPS"), group.port("HTTP"), router, temporary=temporary, identities=jwts),
            flush=True,
        )
        if processes:
            admin = ZitiClient.in_process(app)
            admin.login(config.admin_username, config.admin_password)
            routers = _start_routers(admin, network, config.data_dir / "routers", processes, args.router_wait)
        if args.exit_after_start:
            stop.set()
        wait_for_stop(stop, embedded.sweep)
    finally:
        if routers is not None:
            routers.stop()
        group.stop()
        embedded.close()
    return 0


def _serve_cluster(args, network, data: Path, temporary: bool) -> int:
    """``up`` for a file with ``controllers: N``: N controller processes as one cluster (each with its edge router
    unless ``--no-router``), the network applied through the first, its routers enrolled there."""
    from controller.server.lifecycle import bind_problem, stop_on_signals, wait_for_stop
    from harness.network import apply
    from harness.processes.cluster import ClusterError, ZitiCluster

    problem = bind_problem("127.0.0.1", args.port) if args.port else None
    if problem:
        raise CliError(f"--port {args.port} {problem}: give another with --port (0 picks a free one)", LOCAL)
    options = ["--http-port", "0", "--ctrl-port", "0", "--log-level", "warning"]
    options += ["--simulation"] if args.simulation else []
    options += ["--no-router"] if args.no_router else ["--router-port", "0"]
    cluster = ZitiCluster(network.controllers, root=data / "cluster", options=tuple(options), first_port=args.port)
    routers = None
    signal.signal(signal.SIGTERM, _interrupted)  # while members start: stop the ones started, as Ctrl-C does
    try:
        try:
            cluster.start()
        except ClusterError as ex:  # the member's own one-line reason is its last line
            said = [line for line in ex.log.splitlines() if line.strip()] or [str(ex)]
            raise CliError(f"the cluster did not start: {said[-1].strip()}", LOCAL) from None
        except (TimeoutError, ValueError) as ex:
            raise CliError(f"the cluster did not start: {ex}", LOCAL) from None
        leader = cluster.leader()
        with cluster.client(0) as client:
            steps = apply(client, network, progress=True)
            print(f"applied {network.source}: {len(steps)} change(s)")
            jwts = write_enrollment_jwts(client, Path(args.out) if args.out else data / "identities")
        lines = ["", f"A cluster of {cluster.size} Python edge controllers is running."]
        for member in cluster.members:
            role = "leader" if member.index == leader else "follower"
            lines.append(f"  {member.instance_id} ({role}): {member.url}/edge/management/v1 and /edge/client/v1")
            if member.ready.get("router"):
                lines.append(f"    edge router: {member.ready['router']}")
            lines.append(f"    control channel (routers): {member.ready.get('ctrl')}")
        lines.append(f"  data folder: {data}" + ("  (temporary: removed on exit)" if temporary else ""))
        lines.append(f"  CA bundle: {cluster.ca_file}  (clients: --ca FILE)")
        lines += [f"  identity: {path}" for path in jwts]
        lines += [f"  admin login: {' / '.join(cluster.admin)}", "  Ctrl-C stops it."]
        stop = threading.Event()
        stop_on_signals(stop)  # before the banner: whoever reads it may stop the cluster at once
        print("\n".join(lines), flush=True)
        if network.process_routers():
            routers = _start_routers(
                cluster.client(0), network, data / "routers", network.process_routers(), args.router_wait
            )
        if args.exit_after_start:
            stop.set()
        wait_for_stop(stop)
    finally:
        if routers is not None:
            routers.stop()
        cluster.close()
    return 0


def _interrupted(*_) -> None:
    raise KeyboardInterrupt


def _kept_ctrl_port(config) -> int:
    """The control channel port routers enrolled in this data folder know (0: any free port)."""
    kept = config.data_dir / "routers" / "ctrl-port"
    return int(kept.read_text()) if kept.is_file() and kept.read_text().strip().isdigit() else 0


def _start_routers(admin, network, folder: Path, processes: list[dict], deadline: float):
    """Run the file's ``process: true`` routers (enrolled through ``admin`` from JWTs written owner-only under
    ``folder``); return once each is online and linked as the file expects, one line per router."""
    from harness.processes.routers import RouterError, RouterNetwork

    routers = RouterNetwork(admin, folder)
    for item in processes:
        routers.add(item["name"], links=item.get("links", ()))
    try:
        routers.start(timeout=deadline)
    except RouterError as ex:
        raise CliError(f"{network.source}: {ex}", ex.code) from None
    for router in routers:
        print(f"router {router.name} online at {router.url} (pid {router.pid}, log {router.log})", flush=True)
    for pair in sorted(tuple(sorted(pair)) for pair in routers.expected_links):
        print(f"link {pair[0]} <-> {pair[1]} connected", flush=True)
    return routers


# -- apply, export, diff, scenario -------------------------------------------------


def cmd_apply(args) -> int:
    from harness.analysis.access_tests import AccessTestsFailed
    from harness.network import apply
    from harness.network.check import check_file

    say = (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr, flush=True))
    say(f"reading {args.network}")
    with connect(args) as client:
        network = check_file(args.network, client)
        say(f"checked {args.network}: {sum(len(v) for v in network.entities.values())} entities")
        try:
            steps = apply(
                client, network, prune=args.prune, dry_run=args.dry_run, progress=not args.quiet, force=args.force
            )
        except AccessTestsFailed as ex:
            print(
                "\n".join(
                    [
                        *ex.report.lines()[:-1],
                        f"{args.network}: {ex.report.summary()}; nothing applied (--force applies anyway)",
                    ]
                ),
                file=sys.stderr,
            )
            return 1
    for step in [] if args.quiet else steps:
        print(("plan   " if args.dry_run else "") + str(step))
    print(f"{len(steps)} change(s){' planned' if args.dry_run else ''}")
    return 0


def cmd_export(args) -> int:
    from harness.network import export

    with connect(args) as client:
        sys.stdout.write(export(client).to_yaml())
    return 0


def _network_or_url(value: str, args):
    from harness.network import Network, export

    if value.startswith(("http://", "https://")):
        with connect(argparse.Namespace(**{**vars(args), "url": value})) as client:
            return export(client)
    return Network.from_yaml(Path(value))


def cmd_diff(args) -> int:
    from harness.network import diff

    changes = diff(_network_or_url(args.before, args), _network_or_url(args.after, args))
    for change in changes:
        print(change)
    return 1 if changes else 0


def cmd_test(args) -> int:
    from harness.analysis.access_tests import check_live
    from harness.network import Network

    network = Network.from_yaml(Path(args.network))
    if not network.tests:
        print(f"{args.network}: no tests: section to check", file=sys.stderr)
        return 2
    with connect(args) as client:
        report = check_live(client, network)
    print("\n".join(report.lines()))
    return 0 if report.ok else 1


def cmd_scenario(args) -> int:
    from harness.network.scenario import ScenarioError, ScenarioRunner, load_scenario

    scenario = load_scenario(args.scenario)
    base = Path(args.scenario).parent
    embedded = None
    if args.url:
        runner = ScenarioRunner(connect(args), make_client=lambda: client_for(args), base=base)
    else:
        from controller.config import Config
        from controller.embedded import EmbeddedController
        from harness.client import ZitiClient

        embedded = EmbeddedController(Config(simulation=True))  # a clock the scenario can move
        admin = ZitiClient.in_process(embedded.app)
        admin.login("admin", "admin")
        runner = ScenarioRunner(
            admin, make_client=lambda: ZitiClient.in_process(embedded.app), base=base, embedded=embedded
        )
    try:
        for line in runner.run(scenario):
            print(line)
    except ScenarioError as ex:
        print(f"FAILED: {ex}", file=sys.stderr)
        return 1
    finally:
        if embedded is not None:
            embedded.close()
    return 0


# -- the parser --------------------------------------------------------------------


def remote(parser: argparse.ArgumentParser, url: str | None = DEFAULT_URL, *, with_url: bool = True) -> None:
    """The options that reach a controller."""
    if with_url and url:
        parser.add_argument(
            "--url",
            default=None,
            type=controller_url,
            help=f"controller URL (default: the login `ziti edge login` saved, else {url})",
        )
        parser.set_defaults(url_fallback=url)
    elif with_url:
        parser.add_argument("--url", default=None, type=controller_url, help="controller URL (default in-process)")
    parser.add_argument("--user", default=None, help="admin username (default admin)")
    parser.add_argument("--password", default=None, help="admin password (default admin)")
    parser.add_argument("--ca", default=None, help="CA bundle (PEM file) to trust for HTTPS (default the system's)")
    parser.add_argument("--insecure", action="store_true", help="do not verify the controller's TLS certificate")


def _seconds(text: str) -> float:
    """A ``type=`` for a deadline: a positive number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of seconds")
    return value


def register_core(sub, common) -> None:
    up = sub.add_parser("up", parents=[common], help="start a controller with a network applied")
    up.add_argument("network", nargs="?", help="network file to apply first (default none)")
    up.add_argument("--data", default=None, help="data folder to keep (default a temporary one, removed on exit)")
    up.add_argument("--port", type=port_number, default=1280, help="HTTPS port (default 1280; 0 picks a free one)")
    up.add_argument(
        "--http-port", type=port_number, default=1281, help="plain HTTP port (default 1281; 0 picks a free one)"
    )
    up.add_argument("--out", default=None, help="where enrollment JWTs are written (default DATA/identities)")
    up.add_argument("--simulation", action="store_true", help="expose clock and fault control endpoints")
    up.add_argument(
        "--router-port", type=port_number, default=3022, help="edge router TLS port (default 3022; 0 = any free port)"
    )
    up.add_argument("--no-router", action="store_true", help="do not start the edge router (default: started)")
    up.add_argument(
        "--ctrl-port",
        type=port_number,
        default=None,
        help="control channel port for routers run as processes (default: any free port when the file "
        "declares routers with process: true, else none)",
    )
    up.add_argument(
        "--router-wait",
        type=_seconds,
        default=30.0,
        metavar="SECONDS",
        help="how long each process router may take to come online and link (default 30)",
    )
    up.add_argument("--exit-after-start", action="store_true", help=argparse.SUPPRESS)
    up.set_defaults(func=cmd_up)

    ap = sub.add_parser("apply", parents=[common], help="make a controller match a network file")
    ap.add_argument("network", help="network file (YAML)")
    ap.add_argument("--prune", action="store_true", help="delete what the file does not name (never system entities)")
    ap.add_argument("--dry-run", action="store_true", help="check and plan only; nothing is written")
    ap.add_argument("--quiet", action="store_true", help="no progress output and no step list: the summary only")
    ap.add_argument("--force", action="store_true", help="apply even if the file's access tests fail")
    remote(ap)
    ap.set_defaults(func=cmd_apply)

    ex = sub.add_parser("export", parents=[common], help="print a controller's network as YAML")
    remote(ex)
    ex.set_defaults(func=cmd_export)

    df = sub.add_parser(
        "diff", parents=[common], help="compare two networks (files or controller URLs); exit 1 if they differ"
    )
    df.add_argument("before", help="network file or controller URL")
    df.add_argument("after", help="network file or controller URL")
    remote(df, with_url=False)
    df.set_defaults(func=cmd_diff)

    te = sub.add_parser(
        "test",
        parents=[common],
        help="check a network file's access tests against a live controller (exit 1 if one fails)",
    )
    te.add_argument("network", help="network file (YAML) with a tests: section")
    remote(te)
    te.set_defaults(func=cmd_test)

    sc = sub.add_parser("scenario", parents=[common], help="run a scenario file (exit 1 if a check fails)")
    sc.add_argument("scenario", help="scenario file (YAML); fixtures/scenarios/ holds an example")
    remote(sc, url=None)
    sc.set_defaults(func=cmd_scenario)


def _register_queries(sub, common) -> None:
    from harness.cli.query import register

    register(sub, common)


def _register_fleet(sub, common) -> None:
    from harness.cli.fleet import register

    register(sub, common)


#: each adds its subcommands: ``register(sub, common)``
SUBCOMMANDS = [register_core, _register_queries, _register_fleet]


def parser() -> argparse.ArgumentParser:
    common = OneLineParser(add_help=False)
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the traceback of a failure instead of one line",
    )
    top = OneLineParser(
        prog="ziti-harness",
        description="Test networks for the Python edge controller: start one, apply, export, diff, inspect,\n"
        "run scenarios. Without --url, commands use the login `ziti edge login` (or `ziti edge quickstart`)\n"
        "saved, else http://127.0.0.1:1281 as admin/admin. `ziti-harness COMMAND --help` tells more.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument("--version", action="version", version=f"ziti-harness {VERSION}")
    top.add_argument("--debug", action="store_true", help="show the traceback of a failure instead of one line")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in SUBCOMMANDS:
        register(sub, common)
    return top


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)

    def parse_and_run() -> int:  # building the parser imports the network package (PyYAML, the harness extra)
        args = parser().parse_args(argv)
        return args.func(args)

    return run(parse_and_run, debug="--debug" in argv, translators=(extra_errors, harness_errors))


def entry() -> None:
    """The console script: exit with ``main``'s code even if a listener thread is stuck."""
    without_unused_imports()
    exit_process(main())
