"""``python -m controller`` / ``ziti-controller``: run a controller on its embedded default."""
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path

from controller.config import Config, is_loopback


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="ziti-controller", description="Run a Python edge controller.")
    parser.add_argument("--data", default=os.environ.get("ZITI_CTRL_DATA", "./data"),
                        help="data folder (TinyDB files and PKI); default ./data")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=1280, help="HTTPS port for both APIs (default 1280)")
    parser.add_argument("--http-port", type=int, default=1281, help="plain HTTP port for local scripts (default 1281; 0 = off)")
    parser.add_argument("--advertise", default=None, help="public host:port clients use (default host:port)")
    parser.add_argument("--hostname", action="append", default=[], metavar="NAME",
                        help="an extra DNS name or IP the TLS server certificate must cover (repeatable)")
    parser.add_argument("--admin-user", default=os.environ.get("ZITI_CTRL_ADMIN_USER", "admin"))
    parser.add_argument("--admin-password", default=os.environ.get("ZITI_CTRL_ADMIN_PASSWORD"),
                        help="password of the default admin (default 'admin', allowed on loopback only)")
    parser.add_argument("--session-timeout", type=int, default=30, help="API session inactivity timeout in minutes")
    parser.add_argument("--server-key", choices=("rsa", "ec"), default=None,
                        help="TLS server key type, which also signs enrollment JWTs: rsa (RS256, the default for a new "
                             "data folder, as the real quickstart) or ec (ES256); an existing folder keeps its key "
                             "unless this is given")
    parser.add_argument("--simulation", action="store_true", help="expose clock and fault control endpoints")
    parser.add_argument("--router-port", type=int, default=3022,
                        help="TLS port of the edge router SDKs dial and bind through (default 3022; 0 = any free port)")
    parser.add_argument("--no-router", action="store_true", help="do not start the edge router")
    parser.add_argument("--quickstart-policies", action="store_true",
                        help="create the quickstart's all-endpoints-public-routers and all-routers-all-services policies")
    parser.add_argument("--no-oidc", dest="oidc", action="store_false",
                        help="do not serve or advertise OIDC authentication (SDKs then log in the legacy way)")
    parser.add_argument("--log-level", default="INFO")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    password = args.admin_password
    if password is None:
        if not is_loopback(args.host):
            print("error: an admin password is required when binding to a non-loopback address "
                  "(--admin-password or ZITI_CTRL_ADMIN_PASSWORD)", file=sys.stderr)
            return 2
        password = "admin"
    advertise = args.advertise or f"{'127.0.0.1' if args.host in ('0.0.0.0', '::') else args.host}:{args.port}"
    hostnames = tuple(dict.fromkeys(["localhost", *args.hostname]))
    config = Config(data_dir=Path(args.data), host=args.host, api_address=advertise, hostnames=hostnames,
                    admin_username=args.admin_user,
                    admin_password=password, session_timeout_seconds=args.session_timeout * 60,
                    simulation=args.simulation, server_key_type=args.server_key, oidc=args.oidc)
    from controller.serve import run

    return run(config, port=args.port, http_port=args.http_port, stop=_stop_event(),
               router_port=None if args.no_router else args.router_port, quickstart_policies=args.quickstart_policies,
               router_advertise=advertise.rsplit(":", 1)[0].strip("[]"))


def _stop_event() -> threading.Event:
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    return stop


if __name__ == "__main__":
    sys.exit(main())
