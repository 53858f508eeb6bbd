"""``python -m router`` / ``ziti-router``: an edge router as its own process.

``enroll JWT_FILE --data DIR`` enrolls an edge router from the JWT ``POST /edge-routers`` gives and
stores its identity in DIR (owner-only); ``run --data DIR`` starts it: SDKs connect on its TLS
port, and it reaches the controller only over the control channel (``docs/control-channel.md``).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import logging
import os
import sys
import threading
import time
from pathlib import Path

from router.stopping import stop_on_signals, wait_for_stop
from router.version import VERSION

EXIT_CODES = (
    "exit codes: 0 ok, 1 the work failed (e.g. enrollment refused), 2 usage, "
    "3 cannot reach the controller or it refused the router, 4 this machine (e.g. port in use), 130 interrupted"
)
OK, FAILED, USAGE, UNREACHABLE, MACHINE, INTERRUPTED = 0, 1, 2, 3, 4, 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ziti-router",
        description="Run a Python edge router as its own process.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"ziti-router {VERSION}")
    parser.add_argument(
        "--log-level",
        default="info",
        type=str.lower,
        choices=("debug", "info", "warning", "error"),
        help="log level (default info)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    enroll = sub.add_parser("enroll", help="enroll an edge router from its enrollment JWT", epilog=EXIT_CODES)
    enroll.add_argument("jwt", metavar="JWT_FILE", help="the edge router's enrollment JWT (from POST /edge-routers)")
    enroll.add_argument("--data", required=True, metavar="DIR", help="folder for the router's identity (created)")
    enroll.add_argument(
        "--advertise",
        default="127.0.0.1:0",
        metavar="HOST:PORT",
        help="address SDKs reach this router at (default 127.0.0.1:0, any free port at each start)",
    )
    enroll.add_argument(
        "--link-advertise",
        default=None,
        metavar="HOST:PORT",
        help="address other routers link to (default: the --advertise host on a free port)",
    )
    enroll.add_argument(
        "--ctrl",
        default=None,
        metavar="tls:HOST:PORT",
        help="the controller's control channel (default: the JWT's ctrls claim, else the issuer host, port 6262)",
    )
    run = sub.add_parser("run", help="run an enrolled edge router", epilog=EXIT_CODES)
    run.add_argument("--data", required=True, metavar="DIR", help="the folder enroll wrote")
    run.add_argument("--host", default=None, help="address to listen on (default: the advertised host if an IP)")
    run.add_argument("--port", type=int, default=None, help="TLS port for SDKs (default: the advertised port)")
    run.add_argument("--ready-file", default=None, metavar="PATH", help="write JSON with the router's url once online")
    run.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="keep trying to reach the controller this long at start (default 0: exit 3 at once)",
    )
    return parser


def split_address(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"{value!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


def write_ready(path: Path, content: dict) -> None:
    """Atomically and owner-only: a reader sees no file or the whole file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        json.dump(content, out)
    os.replace(temporary, path)


def enroll_command(args) -> int:
    from router.enroll import enroll

    try:
        token = Path(args.jwt).read_text().strip()
    except OSError as ex:
        raise UsageError(f"cannot read the JWT file {args.jwt}: {ex.strerror}") from None
    try:
        split_address(args.advertise)
    except ValueError as ex:
        raise UsageError(f"--advertise: {ex}") from None
    config = enroll(
        token, Path(args.data), advertise=args.advertise, link_advertise=args.link_advertise, ctrl=args.ctrl
    )
    print(f"enrolled edge router {config['routerId']} into {args.data} (control channel {config['ctrl']})", flush=True)
    return OK


def run_command(args) -> int:
    from router.control import ControlError
    from router.enroll import enrolled_controllers, load
    from router.members import ControllerMembers, load_endpoints
    from router.server import EdgeRouter

    started = time.perf_counter()
    config, pems = load(Path(args.data))
    host, port = split_address(config["advertise"])
    port = port if args.port is None else args.port
    listen = args.host or (host if _is_ip(host) else "0.0.0.0")
    # a cluster's members, as the controllers told them last (the real router's endpoints file), else the enrolled ones
    link = ControllerMembers(
        load_endpoints(Path(args.data)) or enrolled_controllers(config),
        data=Path(args.data),
        cert_pem=pems["cert"],
        key_pem=pems["key"],
        server_cert_pem=pems["server_cert"],
        ca_pem=pems["ca"],
    )
    deadline, waiting = time.monotonic() + args.wait, False
    while True:
        try:
            link.connect()
            break
        except ControlError as ex:
            if time.monotonic() >= deadline:
                raise Unreachable(str(ex)) from None
            if not waiting:
                waiting = True
                print(f"waiting up to {args.wait:g} s for the controller: {ex}", flush=True)
            time.sleep(0.05)
    stop = threading.Event()
    stop_on_signals(stop)
    link_host, link_port = split_address(config["linkAdvertise"]) if config.get("linkAdvertise") else (host, 0)
    router = EdgeRouter(link, listen, port, advertise=host, link_port=link_port, link_advertise=link_host)
    try:
        router.start()
    except OSError as ex:
        link.close()
        raise MachineError(str(ex).replace("--router-port, or --no-router", "--port")) from None
    try:
        if args.ready_file:
            write_ready(Path(args.ready_file), {"routerId": link.router_id, "name": link.name, "url": router.url})
        print(
            f"edge router {link.name} ({link.router_id}) ready at {router.url} "
            f"in {time.perf_counter() - started:.2f} s (control channel {config['ctrl']})",
            flush=True,
        )
        wait_for_stop(stop)
    finally:
        _stop_within(router, STOP_SECONDS)
        link.close()
    return OK


#: how long a stopping router waits for its channels to close and the controller to hear it went offline
STOP_SECONDS = 5.0


def _stop_within(router, seconds: float) -> None:
    """Stop the router, but never hang a SIGTERM: past ``seconds`` (a controller that does not answer, a peer
    that does not close) it goes on; closing the control channel then ends what still waits on the controller,
    and the controller sees the connection drop."""
    stopper = threading.Thread(target=router.stop, name="router-stop", daemon=True)
    stopper.start()
    stopper.join(seconds)
    if stopper.is_alive():
        print(f"router: stopping took longer than {seconds:g} s; exiting without waiting further", file=sys.stderr)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


class UsageError(Exception):
    exit_code = USAGE


class Unreachable(Exception):
    exit_code = UNREACHABLE


class MachineError(Exception):
    exit_code = MACHINE


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    from router.enroll import EnrollError  # after parsing: --help and a usage mistake need no HTTP client or JWT

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # APPSEC: httpx logs each request's URL at INFO, and the enrollment's carries its one-time token
    logging.getLogger("httpx").setLevel(max(logging.WARNING, logging.getLogger().level))
    try:
        return enroll_command(args) if args.command == "enroll" else run_command(args)
    except (UsageError, Unreachable, MachineError, EnrollError) as ex:
        print(f"error: {ex}", file=sys.stderr, flush=True)
        return ex.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr, flush=True)
        return INTERRUPTED


def entry() -> None:
    # httpcore probes trio for an async backend where it is installed (50 ms); the enrollment's client is sync;
    # httpx loads its own command line (click, rich, pygments: 15 ms) where they are installed
    # (controller.console.without_unused_imports does the same for the other command lines)
    for name in ("trio", "httpx._main"):
        sys.modules.setdefault(name, None)  # type: ignore[assignment]
    sys.exit(main())


if __name__ == "__main__":
    entry()
