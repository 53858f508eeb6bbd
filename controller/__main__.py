"""``python -m controller`` / ``ziti-controller``: run a controller on its embedded default."""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

from controller.config import VERSION, Config, is_loopback
from controller.console import (
    EXIT_CODES,
    USAGE,
    CliError,
    OneLineParser,
    advertised_address,
    check_data_folder,
    check_host,
    exit_process,
    port_number,
    positive_minutes,
    run,
    url_host,
    without_unused_imports,
)

LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


def parse_args(argv=None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="ziti-controller",
        description="Run a Python edge controller.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add("--version", action="version", version=f"ziti-controller {VERSION}")
    add(
        "--data",
        default=os.environ.get("ZITI_CTRL_DATA", "./data"),
        help="data folder (TinyDB files and PKI); default ./data (env ZITI_CTRL_DATA)",
    )
    add("--temp", action="store_true", help="use a fresh temporary data folder, removed on exit")
    add("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    add("--port", type=port_number, default=1280, help="HTTPS port for both APIs (default 1280; 0 = any free port)")
    add(
        "--http-port",
        type=port_number,
        default=1281,
        help="plain HTTP port for local scripts (default 1281; 0 = any free port; --no-http turns it off)",
    )
    add("--no-http", action="store_true", help="serve no plain HTTP (default: served on --http-port)")
    add(
        "--advertise",
        type=advertised_address,
        default=None,
        metavar="HOST[:PORT]",
        help="the address clients are given, in enrollment JWTs and identity files (default --host; PORT "
        "defaults to the HTTPS port)",
    )
    add(
        "--hostname",
        action="append",
        default=[],
        metavar="NAME",
        help="an extra DNS name or IP the TLS server certificate must cover (repeatable; default none)",
    )
    add(
        "--admin-user",
        default=os.environ.get("ZITI_CTRL_ADMIN_USER", "admin"),
        help="username of the default admin (default admin; env ZITI_CTRL_ADMIN_USER)",
    )
    add(
        "--admin-password",
        default=os.environ.get("ZITI_CTRL_ADMIN_PASSWORD"),
        help="password of the default admin (default 'admin', allowed on loopback only; env ZITI_CTRL_ADMIN_PASSWORD)",
    )
    add(
        "--session-timeout",
        type=positive_minutes,
        default=30,
        help="API session inactivity timeout in whole minutes, at least 1 (default 30)",
    )
    add(
        "--server-key",
        choices=("rsa", "ec"),
        default=None,
        help="TLS server key type, which also signs enrollment JWTs: rsa (RS256, the default for a new data folder, "
        "as the real quickstart) or ec (ES256); an existing folder keeps its key unless this is given",
    )
    add(
        "--no-oidc",
        dest="oidc",
        action="store_false",
        help="do not serve or advertise OIDC authentication (SDKs then log in the legacy way; default: served)",
    )
    add(
        "--console",
        metavar="DIR",
        default=os.environ.get("ZITI_CTRL_CONSOLE"),
        help="serve the single-page app in DIR (a build of the Ziti Admin Console) at /zac/ (env ZITI_CTRL_CONSOLE)",
    )
    add("--simulation", action="store_true", help="expose clock and fault control endpoints (default off)")
    add(
        "--router-port",
        type=port_number,
        default=3022,
        help="TLS port of the edge router SDKs dial and bind through (default 3022; 0 = any free port)",
    )
    add("--no-router", action="store_true", help="do not start the edge router (default: started)")
    add(
        "--ctrl-port",
        type=port_number,
        default=6262,
        help="control channel port routers started as their own processes (python -m router) connect to "
        "(default 6262, as the real quickstart; 0 = any free port)",
    )
    add(
        "--ready-file",
        default=None,
        metavar="PATH",
        help="once the admin API serves and the edge router is online, write PATH (JSON with the urls; default none)",
    )
    add(
        "--quickstart-policies",
        action="store_true",
        help="create the quickstart's all-endpoints-public-routers and all-routers-all-services policies (default off)",
    )
    add(
        "--cluster",
        action="store_true",
        help="run as a member of a controller cluster (raft): a new cluster, or the one --cluster-member names",
    )
    add(
        "--cluster-member",
        action="append",
        default=[],
        metavar="tls:HOST:PORT",
        help="the API address of a running cluster member to join (repeatable; implies --cluster)",
    )
    add("--instance-id", default=None, help="this member's id in the cluster (default: the data folder's name)")
    add(
        "--raft-port",
        type=port_number,
        default=None,
        help="the port of this member's raft transport (default: the HTTPS port + 10000)",
    )
    add(
        "--raft-snapshot-threshold",
        type=_entry_count,
        default=None,
        metavar="ENTRIES",
        help="raft log entries kept before a snapshot of the store replaces them (default 20000)",
    )
    add(
        "--log-level",
        default="info",
        type=str.lower,
        choices=LOG_LEVELS,
        help="debug, info (one access-log line per request), warning, error or critical (default info)",
    )
    add("--debug", action="store_true", help="show the traceback of a failure instead of one line")
    return parser


def build_config(args, data_dir: Path | None) -> Config:
    """The Config the options describe; CliError when they contradict each other."""
    password = args.admin_password
    if password is None:
        if not is_loopback(args.host):
            raise CliError(
                "an admin password is required when binding to a non-loopback address "
                "(--admin-password or ZITI_CTRL_ADMIN_PASSWORD)",
                USAGE,
            )
        password = "admin"
    else:
        check_admin_password(password)
    console = Path(args.console) if args.console else None
    if console is not None and not (console / "index.html").is_file():
        raise CliError(f"--console {args.console}: no index.html there; give the folder of a console build", USAGE)
    advertised_host, advertised_port = args.advertise or (
        "127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host,
        None,
    )
    # port 0 (any free port) is resolved once chosen, before anything names it (controller.embedded.serve)
    advertise = f"{url_host(advertised_host)}:{advertised_port or args.port}"
    hostnames = tuple(dict.fromkeys(["localhost", *args.hostname]))
    cluster = None
    if args.cluster or args.cluster_member:
        cluster = cluster_config(args, advertise)
    return Config(
        cluster=cluster,
        data_dir=data_dir,
        host=args.host,
        api_address=advertise,
        hostnames=hostnames,
        admin_username=args.admin_user,
        admin_password=password,
        session_timeout_seconds=args.session_timeout * 60,
        simulation=args.simulation,
        server_key_type=args.server_key,
        oidc=args.oidc,
        console_dir=console,
    )


def cluster_config(args, advertise: str):
    """The cluster options as a ``ClusterConfig``; CliError when they cannot make a member."""
    from controller.cluster.member import ClusterConfig, raft_address_of, raft_port_for

    host = advertise.rsplit(":", 1)[0].strip("[]")
    raft_port = args.raft_port or raft_port_for(args.port)
    try:
        join = [raft_address_of(member) for member in args.cluster_member]
    except ValueError:
        raise CliError("--cluster-member: give the API address of a member as tls:HOST:PORT", USAGE) from None
    instance_id = args.instance_id or (f"ctrl-{args.port}" if args.temp else Path(args.data).resolve().name)
    config = ClusterConfig(
        instance_id=instance_id, raft_address=f"{host}:{raft_port}", join=join, api_address=f"tls:{advertise}"
    )
    if args.raft_snapshot_threshold is not None:
        config.settings.compaction_entries = args.raft_snapshot_threshold
    return config


def _entry_count(text: str) -> int:
    """An ``type=`` for a number of raft log entries, at least 10."""
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of entries") from None
    if count < 10:
        raise argparse.ArgumentTypeError(f"{count} entries: give a whole number of entries, at least 10")
    return count


def check_admin_password(password: str) -> None:
    """CliError (usage) when ``password`` breaks the default authentication policy's password rules."""
    from controller.auth.passwords import check_rules
    from controller.model.auth_policy import DEFAULT_POLICY, password_rules

    reason = check_rules(password, password_rules(DEFAULT_POLICY))
    if reason:
        raise CliError(f"--admin-password: the {reason} (the controller's password rules); choose another", USAGE)


def serve(args) -> int:
    from controller.embedded import serve as run_server
    from controller.server.lifecycle import stop_on_signals

    config = build_config(args, None)  # every option is checked before anything is written
    check_host(args.host)
    if not args.temp:
        check_data_folder(Path(args.data))
    data_dir = Path(tempfile.mkdtemp(prefix="ziti-controller-")) if args.temp else Path(args.data)
    try:
        config.data_dir = data_dir
        if config.cluster is not None and config.cluster.join:
            _prepare_join(config, data_dir, args.cluster_member)
        if (data_dir / "db").exists():  # the default admin was made then: its password is not ours to print
            config.extra["admin_login"] = f"{config.admin_username} / the password given when this folder was made"
            if args.admin_password is not None:
                print(
                    "warning: --admin-password (or ZITI_CTRL_ADMIN_PASSWORD) sets the admin password of a new data "
                    f"folder only: {data_dir} keeps the one it was made with (log in with that one and change it, "
                    "or give a new --data)",
                    file=sys.stderr,
                    flush=True,
                )
        stop = threading.Event()
        stop_on_signals(stop)
        return run_server(
            config,
            port=args.port,
            http_port=None if args.no_http else args.http_port,
            stop=stop,
            temporary=args.temp,
            router_port=None if args.no_router else args.router_port,
            quickstart_policies=args.quickstart_policies,
            router_advertise=config.api_address.rsplit(":", 1)[0].strip("[]"),
            ctrl_port=args.ctrl_port,
            ready_file=args.ready_file,
        )
    finally:
        if args.temp:
            shutil.rmtree(data_dir, ignore_errors=True)


def _prepare_join(config: Config, data_dir: Path, members: list[str]) -> None:
    """A joining member needs the cluster's CA in its data folder; it asks a member to add it (as the admin)."""
    from controller.cluster.join import admin_join_request
    from controller.pki.ca import FILES

    pki = data_dir / "pki"
    if not (pki / FILES["root_key"]).exists() or not (pki / FILES["intermediate_key"]).exists():
        raise CliError(
            f"--cluster-member: copy the cluster's CA files (root-ca.*, intermediate-ca.*) from a member's "
            f"data folder's pki/ into {pki}/ first",
            USAGE,
        )
    config.cluster.ask_to_join = admin_join_request(
        members, pki / FILES["root_cert"], config.admin_username, config.admin_password
    )


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return run(lambda: serve(args), debug=args.debug)


def entry() -> None:
    """The console script: exit with ``main``'s code even if a listener thread is stuck."""
    without_unused_imports()
    exit_process(main())


if __name__ == "__main__":
    entry()
