"""``ziti-harness fleet``: N SDKs that behave as libziti 1.x does, against a controller, with per-second figures.

The SDKs' certificates come from a CA of the fleet's own that the command registers (as ``--user``) with
auto-enrollment; each SDK enrolls on first contact, logs in (OIDC, or ``--legacy``) and polls on the real
schedule. One line per second (``--json``: one JSON object per line), then a summary; exit 1 if any SDK saw
an error.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys

from controller.console import FAILED, OK, USAGE, CliError


def _positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text} is not positive")
        return value

    parse.__name__ = kind.__name__
    return parse


def register(sub, common) -> None:
    from harness.cli import remote

    fl = sub.add_parser("fleet", parents=[common], help="run N SDKs polling as libziti 1.x does; per-second figures")
    fl.add_argument("--clients", type=_positive(int), default=10, help="how many SDKs (default 10)")
    fl.add_argument("--seconds", type=_positive(float), default=60.0, help="how long they run (default 60)")
    fl.add_argument(
        "--sdk-url", default=None, help="the HTTPS address the SDKs use (default --url when it is https://)"
    )
    fl.add_argument("--legacy", action="store_true", help="log in by POST /authenticate instead of OIDC")
    fl.add_argument(
        "--poll-every", type=_positive(float), default=10.0, help="seconds between service-update polls (default 10)"
    )
    fl.add_argument(
        "--routers-every", type=_positive(float), default=60.0, help="seconds between edge-router polls (default 60)"
    )
    fl.add_argument("--ramp", type=float, default=None, help="seconds over which the SDKs start (default one poll)")
    fl.add_argument("--controller-pid", type=int, default=None, help="the controller's process: its CPU and RSS")
    fl.add_argument("--json", action="store_true", help="one JSON object per second, then the summary")
    remote(fl)
    fl.set_defaults(func=cmd_fleet)


def _line(second) -> str:
    text = (
        f"t={second.t:>5.0f}s polls={second.polls:<5} p50={second.p50_ms:7.2f}ms p99={second.p99_ms:7.2f}ms "
        f"errors={second.errors} logged_in={second.logged_in}"
    )
    if second.cpu_percent is not None:
        text += f" cpu={second.cpu_percent:.0f}% rss={second.rss_mb:.0f}MB"
    return text


def cmd_fleet(args) -> int:
    from harness.cli import connect
    from harness.dataplane import flows
    from harness.dataplane.fleet import Fleet, Schedule, provision, second_dict

    sdk_url = args.sdk_url or (args.url if args.url.startswith("https://") else None)
    if not sdk_url or not sdk_url.startswith("https://"):
        raise CliError("the SDKs need the controller's HTTPS address: give --sdk-url https://HOST:PORT", USAGE)
    admin = connect(args)
    try:
        ca = flows.ca_bundle(admin)
        identities = provision(admin, args.clients, prefix=f"fleet-{secrets.token_hex(3)}")
    finally:
        admin.close()
    schedule = Schedule(args.poll_every, args.routers_every, "legacy" if args.legacy else "oidc")
    fleet = Fleet(sdk_url, ca, identities, schedule=schedule, controller_pid=args.controller_pid)

    def show(second) -> None:
        sys.stdout.write((json.dumps(second_dict(second)) if args.json else _line(second)) + "\n")
        sys.stdout.flush()

    report = fleet.run_sync(args.seconds, on_second=show, ramp=args.ramp)
    summary = report.summary()
    if args.json:
        sys.stdout.write(json.dumps({"summary": summary, "errors": report.errors[:10]}) + "\n")
    else:
        sys.stdout.write(
            f"{summary['logged_in']}/{summary['clients']} SDKs logged in; {summary['polls']} steady polls, "
            f"p50 {summary['p50_ms']:.2f} ms, p99 {summary['p99_ms']:.2f} ms; {summary['errors']} errors\n"
        )
        for error in report.errors[:5]:
            sys.stdout.write(f"  {error}\n")
    return FAILED if report.errors or summary["logged_in"] < summary["clients"] else OK
