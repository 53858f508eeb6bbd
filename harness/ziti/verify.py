"""``ziti ops verify traffic``: one message through the overlay, with throw-away identities, service and policies.

The real command's steps, names and log lines (``--mode both``, the default):

1. names from ``--prefix`` (default the local time, ``2006-01-02-1504``): service
   ``P.traffic`` (attribute ``P.traffic``), identities ``P.server`` (``#P.traffic.binders``)
   and ``P.client`` (``#P.traffic.dialers``), service policies ``P.bind`` and ``P.dial``;
2. ``--cleanup`` first deletes what an earlier run with the same prefix left;
3. the service and both policies are created, then the server identity, enrolled (EC key),
   binds the service and waits for one connection;
4. the client identity, enrolled, waits up to 10 s for a terminator, finds the service,
   dials, sends ``traffic test`` and reads the server's ``you sent me: ...`` answer;
5. everything is deleted again (the server's part by the server, the client by the client).

``--mode server`` and ``--mode client`` run one side each (share ``--prefix``). Lines are
logrus's, as the real command prints them (colour, level padded to 7), on stderr. A failed
exchange exits 1: as the fix in openziti/ziti's ``fix/verify-traffic-timeout`` branch does
(released 2.0.x logged the client's error and exited 0, so a caller could not retry on it).
``--ext-jwt-signer`` (a browser OIDC login) is not supported by this drop-in.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

from controller.console import FAILED, USAGE, CliError
from harness.ziti.common import add_common, bool_flag

COLORS = {"debug": 37, "info": 36, "warning": 33, "error": 31}
TERMINATOR_WAIT = 10.0
GREETING = "traffic test\n"


class Log:
    """logrus's text format as the real command configures it: no timestamp, padded level, colour forced."""

    def __init__(self, verbose: bool):
        self.verbose = verbose

    def __call__(self, level: str, message: str) -> None:
        if level == "debug" and not self.verbose:
            return
        message = message.removesuffix("\n")  # as logrus trims one
        sys.stderr.write(f"\x1b[{COLORS[level]}m{level.upper():<7}\x1b[0m {message:<44} \n")
        sys.stderr.flush()


class Traffic:
    """One run: the names, the management client and the log."""

    def __init__(self, args, client, log: Log):
        self.args, self.client, self.log = args, client, log
        prefix = args.prefix
        self.svc = f"{prefix}.traffic"
        suffix = str(time.time_ns()) if args.allow_multiple_servers else ""
        self.server_name, self.client_name = f"{prefix}.server{suffix}", f"{prefix}.client"
        self.bind_policy, self.dial_policy = f"{prefix}.bind", f"{prefix}.dial"
        self.binders, self.dialers = f"{self.svc}.binders", f"{self.svc}.dialers"
        #: set once the server has bound the service (or failed to)
        self.bound = threading.Event()

    # -- management -----------------------------------------------------------------------------
    def find(self, collection: str, name: str) -> dict | None:
        found = self.client.mgmt_ok("GET", f"/{collection}", params={"filter": f"name={json.dumps(name)}"})
        return found[0] if found else None

    def delete(self, collection: str, name: str, what: str) -> None:
        from harness.client import ApiError

        entity = self.find(collection, name)
        if entity is None:
            return
        try:
            self.client.mgmt_ok("DELETE", f"/{collection}/{entity['id']}")
        except ApiError as ex:
            self.log("error", f"Failed to delete {what}: {entity['id']}. {ex.message}")

    def has_terminator(self) -> bool:
        filter_ = f"service.name={json.dumps(self.svc)}"
        return bool(self.client.mgmt_ok("GET", "/terminators", params={"filter": filter_}))

    def configure_service(self) -> None:
        from harness.client import ApiError

        multiple = self.args.allow_multiple_servers
        if not (multiple and self.find("services", self.svc)):
            body = {"name": self.svc, "encryptionRequired": True, "roleAttributes": [self.svc], "configs": []}
            try:
                self.client.create("services", body)
            except ApiError as ex:
                raise CliError(f"failed to create service {self.svc}: {ex.message}", FAILED) from ex
        for name, kind, role in ((self.bind_policy, "Bind", self.binders), (self.dial_policy, "Dial", self.dialers)):
            if multiple and self.find("service-policies", name):
                self.log("debug", f"service policy already exists. not creating: {name}")
                continue
            body = {
                "name": name,
                "type": kind,
                "semantic": "AllOf",
                "identityRoles": [f"#{role}"],
                "serviceRoles": [f"#{self.svc}"],
            }
            try:
                self.client.create("service-policies", body)
            except ApiError as ex:
                raise CliError(f"failed to create service policy: {name}", FAILED) from ex

    def enrolled(self, name: str, attribute: str):
        """A new identity with ``attribute``, enrolled by its one-time token: its certificate-logged-in data plane."""
        from harness.client import ApiError
        from harness.client.enroll import served_certificate
        from harness.dataplane import flows
        from harness.dataplane.sync import SyncDataPlane

        body = {
            "name": name,
            "type": "User",
            "isAdmin": False,
            "roleAttributes": [attribute],
            "enrollment": {"ott": True},
        }
        try:
            identity_id = self.client.create("identities", body)
        except ApiError as ex:
            if self.find("identities", name) is not None:
                raise CliError(
                    f"identity named {name} exists, remove it before trying again or use --cleanup", FAILED
                ) from ex
            raise CliError(f"failed to create the identity: {ex.message}", FAILED) from ex
        token = self.client.mgmt_ok("GET", f"/identities/{identity_id}")["enrollment"]["ott"]["jwt"]
        base = str(self.client.http.base_url).rstrip("/")
        identity = flows.enroll_ott(self.client, token, key_type="ec", server_cert=served_certificate(base))
        session = _cert_session(identity, base, self.args.timeout)
        return SyncDataPlane(session, identity, timeout=float(self.args.timeout)), session

    # -- the two sides ------------------------------------------------------------------------------
    def cleanup_server(self) -> None:
        if self.args.allow_multiple_servers and self.has_terminator():
            self.log("debug", f"found terminator for service: {self.svc}. cleanup will be skipped.")
            return
        self.delete("service-policies", self.dial_policy, "the service policy")
        self.delete("service-policies", self.bind_policy, "the service policy")
        self.delete("services", self.svc, "service")
        self.delete("identities", self.server_name, "identity")

    def cleanup_client(self) -> None:
        self.delete("identities", self.client_name, "identity")

    def serve(self, done: threading.Event, stop: threading.Event) -> None:
        """Bind the service; answer the first connection; return when answered or ``stop`` is set."""
        plane, _ = self.enrolled(self.server_name, self.binders)
        try:
            plane.bind(self.svc, lambda conn: self._answer(conn, done))
            self.log("info", f"successfully bound service: {self.svc}.")
            print(flush=True)  # put a line in output for the humans
            self.log("info", "Server is listening for a connection and will exit when one is received.")
            self.bound.set()
            while not (done.is_set() or stop.is_set()):
                done.wait(0.1)
            if stop.is_set() and not done.is_set():
                self.log("info", "Server shutting down")
                return
        finally:
            plane.close()
        self.log("info", "Server complete. exiting")

    def _answer(self, conn, done: threading.Event) -> None:
        self.log("info", "Server has accepted a connection and will exit soon.")
        self.log("debug", "new connection accepted")
        try:
            line = _read_line(conn)
            if "traffic test" in line:
                self.log("info", "traffic test successfully detected")
            self.log("debug", f"read : {line.strip()}")
            reply = f"you sent me: {line}"
            conn.sendall(reply.encode())
            self.log("debug", f"responding with : {reply.strip()}")
        finally:
            conn.close()
            done.set()

    def dial(self) -> None:
        from harness.dataplane import DialError

        plane, session = self.enrolled(self.client_name, self.dialers)
        try:
            self._wait_for_terminator()
            found = session.edge_ok("GET", "/services", params={"filter": f"name={json.dumps(self.svc)}"})
            if not found:
                raise CliError("error when retrieving all the services for the provided config", FAILED)
            self.log("info", f"found service named: {found[0]['name']}")
            try:
                conn = plane.dial(self.svc)
            except (DialError, ConnectionError, TimeoutError) as ex:
                raise CliError(f"error when dialing service name {self.svc}. {ex}", FAILED) from ex
            self.log("info", f"successfully dialed service: {self.svc}.")
            with conn:
                conn.sendall(GREETING.encode())
                self.log("debug", f"wrote {len(GREETING)} bytes")
                self.log("debug", f"sent : {GREETING}")
                self.log("debug", f"Received: {_read_line(conn).strip()}")
        finally:
            plane.close()
        self.log("debug", "client received expected response. stopping server if it's running")

    def _wait_for_terminator(self) -> None:
        self.log("info", f"waiting 10s for terminator for service: {self.svc}")
        deadline = time.monotonic() + TERMINATOR_WAIT
        while not self.has_terminator():
            if time.monotonic() >= deadline:
                raise CliError(f"terminator not found for service: {self.svc}", FAILED)
            time.sleep(0.1)
        self.log("info", f"found terminator for service: {self.svc}")


def _read_line(conn) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv()
        if not chunk:
            break
        data += chunk
    return data.decode("utf-8", errors="replace")


def _cert_session(identity, base: str, timeout):
    """A client logged in with ``identity``'s certificate (its key written only for the TLS context to load)."""
    from harness.client import ZitiClient

    with tempfile.TemporaryDirectory(prefix="ziti-verify-") as scratch:
        chain_file, key_file = identity.cert_key().write(Path(scratch))
        ca_file = Path(scratch) / "ca.pem"
        ca_file.write_text(identity.ca_pem)
        client = ZitiClient.connect(base, ca=str(ca_file), cert=(str(chain_file), str(key_file)), timeout=timeout)
    client.login_cert()
    return client


def _management_client(args):
    """The login the flags give (as ``ziti edge login`` would make it, not saved), else the saved one."""
    from harness.ziti import account, session

    if not (args.controller_url or args.username or args.token or args.client_cert or args.file or args.ext_jwt):
        return session.saved_client(args.cli_identity, args.timeout)
    config = session.load_config()
    saved = config["edgeIdentities"].get(session.identity_name(config, args.cli_identity)) or {}
    url = args.controller_url or saved.get("url")
    if not url:
        raise CliError("give the controller: --controller-url HOST:PORT -u USER -p PASSWORD", USAGE)
    creds = account.Credentials(args)
    if creds.needs_password and not (creds.username and creds.password):
        raise CliError("username and password required: give -u USER -p PASSWORD (or log in first)", USAGE)
    _, token, ca = account.login(url, creds, ca=args.ca, yes=bool(args.yes), timeout=args.timeout)
    from harness.client import ZitiClient

    client = ZitiClient.connect(session.base_url(account._controller_url(url)[0]), ca=ca, timeout=args.timeout)
    if account.is_jwt(token):
        client.http.headers["Authorization"] = f"Bearer {token}"
    else:
        client.token = token
    return client


def cmd_traffic(args) -> int:
    log = Log(args.verbose)
    if not args.prefix:
        args.prefix = datetime.now().strftime("%Y-%m-%d-%H%M")
        if args.mode not in (None, "", "both"):
            log(
                "warning",
                f"no prefix and mode [{args.mode}] is not 'both'. default prefix of {args.prefix} will be used",
            )
    mode = args.mode or "both"
    if args.ext_jwt_signer and not args.controller_url:
        raise CliError("--controller-url is required when using --ext-jwt-signer", FAILED)
    if args.ext_jwt_signer:
        raise CliError("--ext-jwt-signer (an OIDC login in a browser) is not supported by this drop-in", USAGE)
    with _management_client(args) as client:
        traffic = Traffic(args, client, log)
        if args.cleanup:
            log(
                "info",
                "attempting to cleanup based on parameters. this operation will disconnect the server if it's running.",
            )
            traffic.cleanup_client()
            traffic.cleanup_server()
            log("info", "cleanup complete. continuing")
        if mode not in ("both", "server", "client"):
            raise CliError(f"unknown mode: {mode} (use server, client or both)", FAILED)
        if mode in ("both", "server"):
            traffic.configure_service()
        return _run(traffic, mode)


def _run(traffic: Traffic, mode: str) -> int:
    done, stop = threading.Event(), threading.Event()
    if mode == "server":
        try:
            traffic.serve(done, stop)
        finally:
            traffic.cleanup_server()
        return 0
    if mode == "client":
        try:
            traffic.dial()
        finally:
            traffic.cleanup_client()
        traffic.log("info", "client complete")
        return 0
    errors: list[BaseException] = []

    def server() -> None:
        try:
            traffic.serve(done, stop)
        except BaseException as ex:  # reported by the main thread
            errors.append(ex)
            traffic.bound.set()

    thread = threading.Thread(target=server, name="verify-traffic-server", daemon=True)
    thread.start()
    try:
        traffic.bound.wait()
        if not errors:
            try:
                traffic.dial()
            finally:
                traffic.cleanup_client()
    finally:
        stop.set()
        thread.join(traffic.args.timeout)
        traffic.cleanup_server()
    if errors:
        raise errors[0]
    traffic.log("info", "client complete")
    return 0


def register(ops_sub) -> None:
    """``ziti ops verify traffic``."""
    from harness.ziti.account import add_login_options

    verify = ops_sub.add_parser("verify", help="a group of commands used to verify an overlay is setup properly")
    verify_sub = verify.add_subparsers(dest="verify_verb", required=True, metavar="VERB")
    p = verify_sub.add_parser(
        "traffic",
        help="Verifies traffic",
        description="A tool to verify traffic can flow over the overlay properly. You must be authenticated to use "
        "this tool.",
    )
    p.add_argument("-x", "--prefix", default="", help="The prefix to apply to generated objects (default: the time)")
    p.add_argument("-m", "--mode", default="", help="The mode to perform: server, client, both (default both)")
    bool_flag(p, "--cleanup", dest="cleanup", default=False, help="Whether to perform cleanup.")
    bool_flag(
        p,
        "--allow-multiple-servers",
        dest="allow_multiple_servers",
        default=False,
        help="Whether to allows the same server multiple times.",
    )
    p.add_argument("--controller-url", default="", help="The url of the controller")
    p.add_argument("--ext-jwt-signer", default="", help="[not supported here] authenticate via this ext-jwt-signer")
    p.add_argument("--ext-jwt-redirect-url", default="", help="[not supported here] OIDC redirect URL")
    add_login_options(p)
    add_common(p)
    p.set_defaults(func=cmd_traffic)
