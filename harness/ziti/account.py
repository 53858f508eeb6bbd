"""``ziti edge login|logout|enroll|policy-advisor`` and ``ziti ops unwrap|cluster recover``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from controller.console import FAILED, UNREACHABLE, USAGE, CliError
from harness.ziti import session
from harness.ziti.common import add_common, bool_flag

if TYPE_CHECKING:
    from harness.client import ZitiClient


def _controller_url(text: str) -> tuple[str, str]:
    """``host:port[/path]`` or a URL -> (``https://host:port``, the management API URL)."""
    if not text.startswith(("http://", "https://")):
        text = "https://" + text
    parts = urlsplit(text)
    if not parts.hostname:
        raise CliError(f"invalid controller URL {text!r}: give HOST:PORT, e.g. 127.0.0.1:1280", USAGE)
    base = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/") or session.MANAGEMENT_PATH
    return base, base + path


def fetch_ca_bundle(base: str, timeout: float = 30.0) -> str:
    """The controller's CA bundle from ``/.well-known/est/cacerts`` (before it is trusted, as ``-y`` does)."""
    from harness.client import ZitiClient
    from harness.client.enroll import parse_cacerts, pem_bundle

    with ZitiClient.connect(base, verify=False, timeout=timeout) as anonymous:
        return pem_bundle(parse_cacerts(anonymous.edge.list_well_known_cas()))


class Credentials:
    """What ``ziti edge login`` authenticates with, in the real command's order of preference:
    ``--token``, then ``-u``/``-p``, then ``--client-cert``/``--client-key``, then ``--file``, then ``--ext-jwt``."""

    def __init__(self, args):
        self.token = args.token or None
        self.username = args.username
        self.password = args.password
        self.client_cert = args.client_cert or None
        self.client_key = args.client_key or None
        self.identity_file = args.file or None
        self.ext_jwt = Path(args.ext_jwt).read_text().strip() if args.ext_jwt else None

    @property
    def needs_password(self) -> bool:
        return not (self.token or self.client_cert or self.client_key or self.identity_file or self.ext_jwt)

    @property
    def method(self) -> str:
        if self.token:
            return "token"
        if self.username and self.password:
            return "password"
        if self.client_cert or self.client_key:
            return "cert"
        if self.identity_file:
            return "file"
        return "ext-jwt"


def is_jwt(token: str) -> bool:
    """An OIDC access token (three base64url parts) rather than a legacy ``zt-session`` token."""
    import base64

    parts = token.split(".")
    if len(parts) != 3:
        return False
    try:
        header = json.loads(base64.urlsafe_b64decode(parts[0] + "=" * (-len(parts[0]) % 4)))
    except ValueError:
        return False
    return isinstance(header, dict) and "alg" in header


def _identity_material(path: str, folder: Path) -> tuple[str, str, str, str]:
    """(ztAPI, cert file, key file, CA file) of an SDK identity file, written owner-only into ``folder``."""
    try:
        identity = json.loads(Path(path).read_text())
        ztapi = (identity.get("ztAPIs") or [None])[0] or identity["ztAPI"]
        material = {name: identity["id"][name] for name in ("cert", "key", "ca")}
    except (ValueError, KeyError, TypeError) as ex:
        raise CliError(f"could not read file {path}: not an identity file with ztAPI and id.cert/key/ca", USAGE) from ex
    files = []
    for name, value in material.items():
        text = value[len("pem:") :] if value.startswith("pem:") else Path(value[len("file://") :]).read_text()
        target = folder / f"{name}.pem"
        session.write_private(target, text)
        files.append(str(target))
    return ztapi, files[0], files[1], files[2]


def login(url: str | None, creds: Credentials, *, ca: str | None, yes: bool, timeout=30.0):
    """Authenticate as ``creds`` says; return (management URL, token, CA file or None) without saving."""
    import tempfile

    from harness.client import ZitiClient

    with tempfile.TemporaryDirectory(prefix="ziti-login-") as scratch:
        cert = None
        if creds.method == "file":
            ztapi, cert_file, key_file, identity_ca = _identity_material(creds.identity_file, Path(scratch))
            url = url or ztapi
            cert = (cert_file, key_file)
            if ca is None:
                ca = str(session.cache_ca(urlsplit(_controller_url(url)[0]).hostname, Path(identity_ca).read_text()))
        elif creds.method == "cert":
            if not (creds.client_cert and creds.client_key):
                raise CliError("certificate login needs both --client-cert FILE and --client-key FILE", USAGE)
            cert = (creds.client_cert, creds.client_key)
        base, management = _controller_url(url)
        if ca is None and base.startswith("https") and not session.trusted_by_system(base, timeout):
            ca = _trusted_ca(base, yes, timeout)
        for path in (ca, *(cert or ())):
            if path and not Path(path).is_file():
                raise CliError(f"no such file: {path}", USAGE)
        try:
            connection = ZitiClient.connect(base, ca=ca, cert=cert, timeout=timeout)
        except (OSError, ValueError) as ex:  # ssl.SSLError is an OSError
            raise CliError(f"could not load the CA bundle, client certificate or key: {ex}", USAGE) from ex
        with connection as client:
            token = _authenticate(client, base, creds)
    return management, token, (str(Path(ca).resolve()) if ca else None)


def _trusted_ca(base: str, yes: bool, timeout: float) -> str:
    """The CA file to trust ``base`` by: the bundle cached by an earlier login when the controller still
    serves it, else the one it serves now, cached in ``certificates/<hostname>`` once ``-y`` or the person
    at the terminal says so (as the real command asks)."""
    hostname = urlsplit(base).hostname
    served = fetch_ca_bundle(base, timeout)
    cached = session.config_dir() / "certificates" / hostname
    if cached.exists() and cached.read_text() == served:
        return str(cached)
    if cached.exists():
        print(f"WARNING: server supplied certificate authority doesn't match cached certs at {cached}", flush=True)
        why = (
            f"the certificate authority the controller at {base} serves doesn't match the one cached at {cached} "
            "(an earlier controller at this address, e.g. a quickstart since removed, left it)"
        )
        question = "Replace cached certs [Y/N]: "
    else:
        print("Untrusted certificate authority retrieved from server", flush=True)
        print(f"Server supplied {served.count('BEGIN CERTIFICATE')} certificates", flush=True)
        why = f"the controller at {base} presents a certificate authority this machine does not trust"
        question = "Trust server provided certificate authority [Y/N]: "
    if not (yes or _ask_yes_no(question, why)):
        raise CliError(f"{why}, and it was not trusted: run again and answer Y, or give --ca FILE", UNREACHABLE)
    return str(session.cache_ca(hostname, served))


def _ask_yes_no(question: str, why: str) -> bool:
    """Ask the person at the terminal; with none (a script, a pipe) say how to go on without a question."""
    if not sys.stdin.isatty():
        raise CliError(
            f"{why}, and there is no terminal to ask: pass -y to trust the one it serves, or --ca FILE", UNREACHABLE
        )
    while True:
        try:
            answer = input(question).strip().lower()
        except EOFError:
            return False
        if answer in ("y", "yes", "n", "no"):
            return answer.startswith("y")
        print(f"Invalid input: {answer}")


def _authenticate(client: ZitiClient, base: str, creds: Credentials) -> str:
    from harness.client import ApiError

    method = creds.method
    try:
        if method == "token":
            if is_jwt(creds.token):
                client.http.headers["Authorization"] = f"Bearer {creds.token}"
            else:
                client.token = creds.token
            client.management.call("getCurrentAPISession")
            return creds.token
        if method == "password":
            body = {"username": creds.username, "password": creds.password}
            return client.management.call("authenticate", method="password", body=body)["token"]
        if method == "ext-jwt":
            headers = {"Authorization": f"Bearer {creds.ext_jwt}"}
            return client.management.call("authenticate", method="ext-jwt", body={}, headers=headers)["token"]
        return client.management.call("authenticate", method="cert", body={})["token"]
    except ApiError as ex:
        if ex.status == 401:
            who = {
                "token": "the token given",
                "password": f"the login of {creds.username!r}",
                "ext-jwt": "the external JWT",
            }.get(method, "the certificate login")
            fix = {
                "token": "log in with -u and -p, or get a new token",
                "password": "check -u and -p",
                "ext-jwt": "check the JWT's issuer, audience and expiry against the ext-jwt signer",
            }.get(method, "check that the certificate belongs to an enrolled identity")
            raise CliError(f"the controller at {base} refused {who} ({ex.code}): {fix}", UNREACHABLE) from ex
        raise


def cmd_login(args) -> int:
    url = args.url
    config = session.load_config()
    name = session.identity_name(config, args.cli_identity)
    saved = {} if args.ignore_config else config["edgeIdentities"].get(name) or {}
    creds = Credentials(args)
    if url is None and not creds.identity_file:
        if not saved.get("url"):
            raise CliError("give the controller address: ziti edge login HOST:PORT -u USER -p PASSWORD", USAGE)
        url = saved["url"]
        print(f"Using controller url: {url} from identity '{name}' in config file: {session.config_file()}")
    if creds.token and args.read_only is None:
        args.read_only = True
        print(
            "NOTE: When using --token the saved identity will be marked as read-only "
            "unless --read-only=false is provided"
        )
    if creds.needs_password:
        creds.username = creds.username or saved.get("username")
        if not creds.username:
            raise CliError(
                "username required but not provided: give -u USER (or --token, --client-cert, --file)", USAGE
            )
        if creds.password is None:
            if not sys.stdin.isatty():
                raise CliError("password required but not provided: give -p PASSWORD", USAGE)
            import getpass

            creds.password = getpass.getpass("Enter password: ")
    management, token, ca = login(url, creds, ca=args.ca, yes=bool(args.yes), timeout=args.timeout)
    if args.ignore_config:
        return 0
    username = creds.username if creds.method == "password" else ""
    path = session.save_login(
        management, username, token, ca, cli_identity=args.cli_identity, read_only=bool(args.read_only)
    )
    print(f"Saving identity '{name}' to {path}")
    return 0


def cmd_logout(args) -> int:
    config = session.load_config()
    name = session.identity_name(config, args.cli_identity)
    login_ = config["edgeIdentities"].get(name)
    if login_:
        try:
            with session.saved_client(args.cli_identity, args.timeout) as client:
                client.edge("DELETE", "/current-api-session")
        except Exception:  # noqa: BLE001 - the saved login is forgotten even when the controller is gone
            pass
    name, found = session.forget_login(args.cli_identity)
    if not found:
        print(f"no identity '{name}' is logged in (config file {session.config_file()})")
        return 0
    print(f"Removing identity '{name}' from {session.config_file()}")
    return 0


def cmd_enroll(args) -> int:
    from harness.client import ZitiClient
    from harness.client.enroll import served_certificate
    from harness.dataplane import flows

    token = Path(args.jwt).read_text().strip()
    claims = flows.jwt_claims(token)
    method = claims.get("em")
    if method not in ("ott", "updb"):
        raise CliError(f"this command enrolls identities by ott or updb; the JWT is for {method!r}", USAGE)
    issuer = claims["iss"]
    base = f"{urlsplit(issuer).scheme}://{urlsplit(issuer).netloc}"
    with ZitiClient.connect(base, verify=False, timeout=float(args.timeout)) as anonymous:
        ca_pem = flows.ca_bundle(anonymous)
    folder = Path(session.config_dir())
    folder.mkdir(parents=True, exist_ok=True)
    ca_file = session.cache_ca(urlsplit(base).hostname + ".enroll", ca_pem)
    server_cert = served_certificate(base)
    with ZitiClient.connect(base, ca=str(ca_file), timeout=float(args.timeout)) as client:
        if method == "updb":
            if not args.password:
                raise CliError("a updb enrollment needs the new password: --password PASSWORD", USAGE)
            flows.verify_enrollment_jwt(token, server_cert)
            flows.enroll_updb(client, token, args.password)
            print(f"enrolled {claims.get('sub')} with a username and password")
            return 0
        key_type = "rsa" if args.key_alg == "RSA" else "ec"
        identity = flows.enroll_ott(client, token, key_type=key_type, server_cert=server_cert)
    out = Path(args.out) if args.out else Path(args.jwt).with_suffix(".json")
    flows.write_identity_file(identity, out)
    print(f"enrolled successfully. identity file written to: {out}")
    return 0


def cmd_policy_advisor(args) -> int:
    from harness.analysis import Analysis
    from harness.cli.query import advise

    with session.saved_client(args.cli_identity, args.timeout) as client:
        analysis = Analysis.from_controller(client)
    by_identity = args.side == "identities"
    names = analysis.identities if by_identity else analysis.services
    if args.name and args.name not in names:
        raise CliError(f"no {'identity' if by_identity else 'service'} named {args.name!r}", FAILED)
    chosen = [args.name] if args.name else sorted(names)
    if args.quiet is None:
        args.quiet = False
    errors = 0
    for name in chosen:
        others = analysis.services_of(name) if by_identity else analysis.identities_of(name)
        if args.other:
            others = [o for o in others if o == args.other]
        if not others:
            print(f"WARN : {name} - {'not granted any service' if by_identity else 'no identity may use it'}")
        for other in others:
            status, line = advise(analysis, *((name, other) if by_identity else (other, name)))
            errors += status == "ERROR"
            if status == "ERROR" or not args.quiet:
                print(f"{status:<5}: {line}")
    if args.output_json:
        print(json.dumps({"errors": errors}))
    return 0


def add_login_options(p, ca_flags=("--ca",)) -> None:
    """The credentials of ``ziti edge login`` (read by :class:`Credentials` and :func:`login`), for every command
    that logs in with them (``ziti edge login``, ``ziti ops verify traffic``)."""
    p.add_argument("-u", "--username", default=None, help="username to use for authenticating")
    p.add_argument("-p", "--password", default=None, help="password to use for authenticating (prompted if missing)")
    p.add_argument("-t", "--token", default=None, help="an api session token already acquired (saved read-only)")
    p.add_argument(*ca_flags, dest="ca", default=None, help="additional root certificates (PEM file)")
    bool_flag(p, "--read-only", dest="read_only", help="marks this login as read-only (only GET operations)")
    bool_flag(p, "-y", "--yes", dest="yes", help="trust the certificate authority the controller serves")
    bool_flag(p, "--ignore-config", dest="ignore_config", help="neither read nor write the config file")
    p.add_argument("-c", "--client-cert", default=None, help="a certificate used to authenticate")
    p.add_argument("-k", "--client-key", default=None, help="the key to use with certificate authentication")
    p.add_argument("-e", "--ext-jwt", default=None, help="a file holding a JWT from an external provider")
    p.add_argument("-f", "--file", default=None, help="an identity file to use for authentication")


def register(edge_sub) -> None:
    p = edge_sub.add_parser("login", help="logs into a Ziti Edge Controller instance")
    p.add_argument("url", nargs="?", default=None, help="controller host[:port][/path]")
    add_login_options(p, ca_flags=("--ca", "--cert"))
    add_common(p)
    p.set_defaults(func=cmd_login)

    p = edge_sub.add_parser("logout", help="logout of a Ziti Edge Controller instance")
    add_common(p)
    p.set_defaults(func=cmd_logout)

    p = edge_sub.add_parser("enroll", help="enroll an identity (ott or updb JWT) and write its identity file")
    p.add_argument("jwt", help="the enrollment JWT file")
    p.add_argument("-o", "--out", default=None, help="identity file to write (default: the JWT's name with .json)")
    p.add_argument("-a", "--key-alg", default="RSA", choices=("RSA", "EC"), help="key type (default RSA)")
    p.add_argument("--password", default=None, help="the password of a updb enrollment")
    add_common(p)
    p.set_defaults(func=cmd_enroll)

    p = edge_sub.add_parser("policy-advisor", help="runs sanity checks on policies")
    p.add_argument("side", choices=["identities", "services"], help="go through identities or services")
    p.add_argument("name", nargs="?", default=None, help="only this identity or service (default all)")
    p.add_argument("other", nargs="?", default=None, help="only this service or identity")
    bool_flag(p, "-q", "--quiet", dest="quiet", help="minimize output by hiding header and OKAY lines")
    add_common(p)
    p.set_defaults(func=cmd_policy_advisor)


def cmd_unwrap(args) -> int:
    """``ziti ops unwrap FILE.json``: the identity file's certificate, key and CA bundle as PEM files."""
    path = Path(args.identity_file)
    try:
        identity = json.loads(path.read_text())
        parts = {name: identity["id"][name] for name in ("cert", "key", "ca")}
    except (ValueError, KeyError, TypeError) as ex:
        raise CliError(f"{path} is not an identity file (JSON with id.cert, id.key, id.ca)", USAGE) from ex
    root = str(path)[: -len(".json")] if str(path).endswith(".json") else str(path)
    targets = {"cert": args.cert or root + ".cert", "key": args.key or root + ".key", "ca": args.ca or root + ".ca"}
    unsupported = [name for name, value in parts.items() if not str(value).startswith("pem:")]
    if unsupported:
        raise CliError(f"{', '.join(unsupported)} of {path} are not inline PEM (pem:...): only PEM is supported", USAGE)
    for name, value in parts.items():
        session.write_private(Path(targets[name]), value[len("pem:") :])
    return 0


def cmd_cluster_recover(args) -> int:
    """``ziti ops cluster recover CONFIG``: this project's controller is never clustered (no raft state to force
    to one node), so it answers as the real command does for a controller configured without HA."""
    path = Path(args.controller_config)
    if not path.is_file():
        raise CliError(f'failed to load controller config "{path}": no such file', FAILED)
    raise CliError(
        f"controller config \"{path}\" has no 'cluster' section; this controller is not configured for HA", FAILED
    )


def register_ops(top_sub):
    """``ziti ops`` and its verbs; the verbs' subparsers (other modules add theirs)."""
    ops = top_sub.add_parser("ops", help="various utilities useful when operating a Ziti network")
    ops_sub = ops.add_subparsers(dest="ops_verb", required=True, metavar="VERB")
    p = ops_sub.add_parser("unwrap", help="unwrap a Ziti identity file into its separate pieces (PEM only)")
    p.add_argument("identity_file", help="the identity file (JSON)")
    p.add_argument("--cert", default=None, help="output certificate file, defaults to ./<root>.cert")
    p.add_argument("--key", default=None, help="output private key file, defaults to ./<root>.key")
    p.add_argument("--ca", default=None, help="output ca bundle file, defaults to ./<root>.ca")
    p.set_defaults(func=cmd_unwrap)
    cluster = ops_sub.add_parser("cluster", help="operations on a controller cluster's local state")
    cluster_sub = cluster.add_subparsers(dest="cluster_verb", required=True, metavar="VERB")
    p = cluster_sub.add_parser("recover", help="force the local raft state to a single node (HA controllers only)")
    p.add_argument("controller_config", help="the controller's configuration file")
    bool_flag(p, "--yes", dest="yes", help="skip the confirmation prompt")
    p.set_defaults(func=cmd_cluster_recover)
    from harness.ziti import cluster as cluster_verbs

    cluster_verbs.register(cluster_sub)  # list, add, remove, transfer-leadership
    return ops_sub
