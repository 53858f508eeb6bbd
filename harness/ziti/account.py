"""``ziti edge login|logout|enroll|policy-advisor``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from urllib.parse import urlsplit

from controller.console import FAILED, UNREACHABLE, USAGE, CliError
from harness.client import ApiError, ZitiClient
from harness.ziti import session
from harness.ziti.common import add_common, bool_flag


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
    from harness.enroll import parse_cacerts, pem_bundle

    with ZitiClient.connect(base, verify=False, timeout=timeout) as anonymous:
        return pem_bundle(parse_cacerts(anonymous.edge.list_well_known_cas()))


def login(url: str, username: str, password: str, *, ca: str | None, yes: bool, cli_identity=None, timeout=30.0):
    """Log in and save the session; return (config file, management URL)."""
    base, management = _controller_url(url)
    if ca is None and base.startswith("https") and not session.trusted_by_system(base, timeout):
        if not yes:
            raise CliError(
                f"the controller at {base} presents a certificate authority this machine does not trust: "
                "pass -y to trust the one it serves, or --ca FILE",
                UNREACHABLE,
            )
        ca = str(session.cache_ca(urlsplit(base).hostname, fetch_ca_bundle(base, timeout)))
    with ZitiClient.connect(base, ca=ca, timeout=timeout) as client:
        try:
            token = client.management.call(
                "authenticate", method="password", body={"username": username, "password": password}
            )["token"]
        except ApiError as ex:
            if ex.status == 401:
                raise CliError(
                    f"the controller at {base} refused the login of {username!r} ({ex.code}): check -u and -p",
                    UNREACHABLE,
                ) from ex
            raise
    path = session.save_login(
        management, username, token, str(Path(ca).resolve()) if ca else None, cli_identity=cli_identity
    )
    return path, management


def cmd_login(args) -> int:
    url = args.url
    config = session.load_config()
    saved = config["edgeIdentities"].get(session.identity_name(config, args.cli_identity)) or {}
    if url is None:
        if not saved.get("url"):
            raise CliError("give the controller address: ziti edge login HOST:PORT -u USER -p PASSWORD", USAGE)
        url = saved["url"]
        print(f"Using controller url: {url} from identity '{session.identity_name(config)}' in config file")
    username = args.username or saved.get("username")
    if not username:
        raise CliError("give a username with -u USER", USAGE)
    password = args.password
    if password is None:
        if not sys.stdin.isatty():
            raise CliError("give a password with -p PASSWORD", USAGE)
        import getpass

        password = getpass.getpass("Enter password: ")
    path, _ = login(
        url, username, password, ca=args.cert, yes=bool(args.yes), cli_identity=args.cli_identity, timeout=args.timeout
    )
    config = session.load_config()
    print(f"Saving identity '{session.identity_name(config, args.cli_identity)}' to {path}")
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
    from harness import flows
    from harness.enroll import served_certificate

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
    from harness.cli_query import advise

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


def register(edge_sub) -> None:
    p = edge_sub.add_parser("login", help="logs into a Ziti Edge Controller instance")
    p.add_argument("url", nargs="?", default=None, help="controller host[:port][/path]")
    p.add_argument("-u", "--username", default=None, help="username to use for authenticating")
    p.add_argument("-p", "--password", default=None, help="password to use for authenticating")
    p.add_argument("-c", "--cert", "--ca", dest="cert", default=None, help="additional root certificates (PEM file)")
    bool_flag(p, "-y", "--yes", dest="yes", help="trust the certificate authority the controller serves")
    p.add_argument("-t", "--token", default=None, help="an api session token already acquired (not supported)")
    bool_flag(p, "--read-only", dest="read_only", help="marks this login as read-only")
    bool_flag(p, "--ignore-config", dest="ignore_config", help="ignore the config file")
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
