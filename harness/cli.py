"""``ziti-harness``: start a local network, apply, export, diff, run scenarios.

* ``ziti-harness up network.yaml``: a controller (data folder, PKI, HTTPS and HTTP)
  and its edge router, with the quickstart policies and the network applied,
  enrollment JWTs written to ``--out``, the admin login printed.
* ``ziti-harness apply network.yaml --url URL [--prune] [--dry-run]``
* ``ziti-harness export --url URL`` (YAML on standard output)
* ``ziti-harness test network.yaml --url URL`` (the file's access tests; exit 1 if one fails)
* ``ziti-harness diff a.yaml b.yaml`` (either side may be a controller URL)
* ``ziti-harness scenario scenario.yaml --url URL`` (or in-process without ``--url``)
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from harness.client import ZitiClient
from harness.network import Network, apply, diff, export
from harness.scenario import ScenarioError, ScenarioRunner, load_scenario


def _connect(args) -> ZitiClient:
    client = ZitiClient.connect(args.url, ca=args.ca, verify=not args.insecure)
    client.login(args.user, args.password)
    return client


def _network_or_url(value: str, args) -> Network:
    if value.startswith(("http://", "https://")):
        client = ZitiClient.connect(value, ca=args.ca, verify=not args.insecure)
        client.login(args.user, args.password)
        with client:
            return export(client)
    return Network.from_yaml(Path(value))


def write_enrollment_jwts(client: ZitiClient, out: Path) -> list[Path]:
    """Write ``<identity name>.jwt`` for every identity with a pending ott enrollment."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for identity in client.management.iterate("listIdentities", page_size=500):
        ott = (identity.get("enrollment") or {}).get("ott")
        if ott and ott.get("jwt"):
            path = out / f"{identity['name']}.jwt"
            path.write_text(ott["jwt"])
            written.append(path)
    return written


def cmd_up(args) -> int:
    from controller.app import create_app
    from controller.bootstrap import ensure_quickstart_policies
    from controller.config import Config
    from controller.serve import ThreadedServer, _start_tls, banner, start_router

    config = Config(data_dir=Path(args.data), api_address=f"127.0.0.1:{args.port}", simulation=args.simulation)
    app = create_app(config)
    ensure_quickstart_policies(app.controller)
    with ZitiClient.in_process(app) as client:
        client.login(config.admin_username, config.admin_password)
        if args.network:
            steps = apply(client, Path(args.network), progress=True)
            print(f"applied {args.network}: {len(steps)} change(s)")
        for path in write_enrollment_jwts(client, Path(args.out)):
            print(f"  enrollment JWT: {path}")
    tls = _start_tls(app, config.host, args.port)
    http = ThreadedServer(app, config.host, args.http_port).start()
    router = None if args.no_router else start_router(app.controller, config.host, args.router_port)
    print(banner(config, tls.port if tls else None, http.port, router), flush=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    if args.exit_after_start:
        stop.set()
    while not stop.wait(5):
        app.controller.api_sessions.sweep()
    for server in (router, tls, http):
        if server is not None:
            server.stop()
    app.controller.close()
    return 0


def cmd_apply(args) -> int:
    from harness.access_tests import AccessTestsFailed

    try:
        with _connect(args) as client:
            steps = apply(client, Path(args.network), prune=args.prune, dry_run=args.dry_run,
                          progress=not args.quiet, force=args.force)
    except AccessTestsFailed as ex:
        print("\n".join([*ex.report.lines()[:-1], f"{args.network}: {ex.report.summary()}; nothing applied"
                                                      " (--force applies anyway)"]), file=sys.stderr)
        return 1
    for step in steps:
        print(("plan   " if args.dry_run else "") + str(step))
    print(f"{len(steps)} change(s){' planned' if args.dry_run else ''}")
    return 0


def cmd_export(args) -> int:
    with _connect(args) as client:
        sys.stdout.write(export(client).to_yaml())
    return 0


def cmd_diff(args) -> int:
    changes = diff(_network_or_url(args.before, args), _network_or_url(args.after, args))
    for change in changes:
        print(change)
    return 1 if changes else 0


def cmd_test(args) -> int:
    from harness.access_tests import check_live

    network = Network.from_yaml(Path(args.network))
    if not network.tests:
        print(f"{args.network}: no tests: section to check", file=sys.stderr)
        return 2
    with _connect(args) as client:
        report = check_live(client, network)
    print("\n".join(report.lines()))
    return 0 if report.ok else 1


def cmd_scenario(args) -> int:
    scenario = load_scenario(args.scenario)
    base = Path(args.scenario).parent
    if args.url:
        admin = _connect(args)
        runner = ScenarioRunner(admin, make_client=lambda: ZitiClient.connect(args.url, ca=args.ca, verify=not args.insecure), base=base)
    else:
        from controller.app import create_app
        from controller.config import Config

        app = create_app(Config(simulation=True))  # a clock the scenario can move
        admin = ZitiClient.in_process(app)
        admin.login("admin", "admin")
        runner = ScenarioRunner(admin, make_client=lambda: ZitiClient.in_process(app), base=base, controller=app.controller)
    try:
        for line in runner.run(scenario):
            print(line)
    except ScenarioError as ex:
        print(f"FAILED: {ex}", file=sys.stderr)
        return 1
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="ziti-harness", description=__doc__.split("\n")[0])
    sub = top.add_subparsers(dest="command", required=True)

    def remote(p):
        p.add_argument("--url", default="http://127.0.0.1:1281", help="controller URL (default the local plain-HTTP port)")
        p.add_argument("--user", default="admin")
        p.add_argument("--password", default="admin")
        p.add_argument("--ca", default=None, help="CA bundle to trust for HTTPS")
        p.add_argument("--insecure", action="store_true", help="do not verify the controller's TLS certificate")

    up = sub.add_parser("up", help="start a controller with a network applied")
    up.add_argument("network", nargs="?")
    up.add_argument("--data", default="./data")
    up.add_argument("--port", type=int, default=1280)
    up.add_argument("--http-port", type=int, default=1281)
    up.add_argument("--out", default="./identities", help="where enrollment JWTs are written")
    up.add_argument("--simulation", action="store_true")
    up.add_argument("--router-port", type=int, default=3022, help="edge router TLS port (default 3022; 0 = any free port)")
    up.add_argument("--no-router", action="store_true", help="do not start the edge router")
    up.add_argument("--exit-after-start", action="store_true", help=argparse.SUPPRESS)
    up.set_defaults(func=cmd_up)

    ap = sub.add_parser("apply", help="make a controller match a network file")
    ap.add_argument("network")
    ap.add_argument("--prune", action="store_true")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--force", action="store_true", help="apply even if the file's access tests fail")
    remote(ap)
    ap.set_defaults(func=cmd_apply)

    ex = sub.add_parser("export", help="print a controller's network as YAML")
    remote(ex)
    ex.set_defaults(func=cmd_export)

    df = sub.add_parser("diff", help="compare two networks (files or controller URLs)")
    df.add_argument("before")
    df.add_argument("after")
    remote(df)
    df.set_defaults(func=cmd_diff)

    te = sub.add_parser("test", help="check a network file's access tests against a live controller")
    te.add_argument("network")
    remote(te)
    te.set_defaults(func=cmd_test)

    sc = sub.add_parser("scenario", help="run a scenario file")
    sc.add_argument("scenario")
    remote(sc)
    sc.set_defaults(url=None)
    sc.set_defaults(func=cmd_scenario)
    return top


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
