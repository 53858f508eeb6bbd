"""``ziti``: a drop-in for the subset of the real OpenZiti CLI that SDK test suites and quickstart users use.

* ``ziti version`` prints :data:`VERSION`, the real release whose behaviour this project follows;
* ``ziti edge quickstart`` runs a controller and its edge router (``harness.ziti.quickstart``);
* ``ziti edge login|logout|enroll|policy-advisor`` (``harness.ziti.account``);
* ``ziti ops unwrap`` splits an identity file into PEM files; ``ziti ops cluster recover`` answers as the real
  one does for a controller without HA (``harness.ziti.account``);
* ``ziti fabric list routers|links|circuits|terminators|services|controllers`` (``harness.ziti.fabric``) and
  ``ziti ops verify traffic`` (``harness.ziti.verify``);
* ``ziti edge create|update|delete|list`` for identities, services, configs, config types,
  policies, edge routers, auth policies, CAs, external JWT signers, posture checks
  (``harness.ziti.edge``).

Everything but the quickstart reaches the controller over its HTTPS API with
the login ``ziti edge login`` (or the quickstart) saved in ``ziti-cli.json``.
A failure prints one ``error: ...`` line; exit codes are the project's
(0 ok, 1 failed, 2 usage, 3 cannot reach or refused, 4 this machine, 130 interrupted).
"""

from __future__ import annotations

import sys

from controller.config import VERSION as CONTROLLER_VERSION
from controller.console import (
    EXIT_CODES,
    UNREACHABLE,
    CliError,
    controller_errors,
    exit_process,
    run,
    without_unused_imports,
)
from harness.extra import extra_errors

#: the real ``ziti`` release whose commands, outputs and controller behaviour this project matches (one constant)
VERSION = CONTROLLER_VERSION


def _errors(ex: BaseException) -> CliError | None:
    import httpx

    from harness.client import ApiError

    if isinstance(ex, httpx.ConnectError):
        where = _where(ex)
        if "CERTIFICATE_VERIFY_FAILED" in str(ex):
            return CliError(
                f"the TLS certificate of {where} is not signed by a trusted CA: log in again with -y or --ca FILE",
                UNREACHABLE,
            )
        return CliError(
            f"nothing is listening at {where}: is the controller running (ziti edge quickstart)?", UNREACHABLE
        )
    if isinstance(ex, httpx.TimeoutException):
        return CliError(f"the controller at {_where(ex)} did not answer in time (--timeout SECONDS)", UNREACHABLE)
    if isinstance(ex, ApiError) and ex.status == 401:
        return CliError(
            f"the controller refused the saved session ({ex.code}): log in again with `ziti edge login`", UNREACHABLE
        )
    if isinstance(ex, ApiError):
        detail = ex.cause.get("reason") or ex.cause.get("message") if isinstance(ex.cause, dict) else ex.cause
        return CliError(
            f"the controller answered {ex.status} {ex.code}: {ex.message}" + (f" ({detail})" if detail else ""), 1
        )
    if isinstance(ex, FileNotFoundError):
        return CliError(f"no such file: {ex.filename}", 2)
    return controller_errors(ex)


def _where(ex) -> str:
    try:
        request = ex.request
    except RuntimeError:
        return "the controller"
    return f"{request.url.scheme}://{request.url.netloc.decode()}"


#: ``ziti edge`` verbs (and aliases) by the module function that registers them; see :func:`parser`
EDGE_VERBS = {
    "quickstart": ("quickstart", "register"),
    **dict.fromkeys(("login", "logout", "enroll", "policy-advisor"), ("account", "register")),
    **dict.fromkeys(("create", "c"), ("edge", "register_create")),
    "update": ("edge", "register_update"),
    **dict.fromkeys(("delete", "list", "ls"), ("edge", "register_delete_and_list")),
}


def _edge_verb(argv: list[str]) -> str | None:
    """The verb of ``ziti edge VERB ...`` in ``argv``, when it is one (else None)."""
    words = [(at, word) for at, word in enumerate(argv) if not word.startswith("-")]
    if len(words) < 2 or words[0][1] != "edge" or words[1][1] not in EDGE_VERBS:
        return None
    at, verb = words[1]
    return None if {"-h", "--help"} & set(argv[:at]) else verb  # ``ziti edge -h list`` lists every verb


def parser(argv: list[str] | None = None):
    """The ``ziti`` parser; given ``argv`` naming an edge verb, only that verb's commands are declared.

    A command runs in a process of its own, and declaring every command (~600 options) costs more
    than most commands' work; ``ziti edge --help`` and an unknown verb still see them all.
    """
    import argparse
    import importlib

    from harness.ziti.common import Parser

    top = Parser(
        prog="ziti",
        description="A drop-in for the OpenZiti `ziti` command (the subset SDK suites use).",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,  # the exit codes one to a line
    )
    top.add_argument("--debug", action="store_true", help="show the traceback of a failure instead of one line")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    version = sub.add_parser("version", help="shows the version of the ziti CLI")
    version.set_defaults(func=lambda args: print(VERSION) or 0)
    edge_parser = sub.add_parser("edge", help="manages the edge components of an OpenZiti network")
    edge_sub = edge_parser.add_subparsers(dest="verb", required=True, metavar="VERB", parser_class=Parser)
    verb = _edge_verb(argv or [])
    # ``ziti edge VERB``: only the function that declares VERB (the other commands are never reached);
    # otherwise each of them once, in the order ``ziti edge --help`` lists them
    for module, function in [EDGE_VERBS[verb]] if verb is not None else dict.fromkeys(EDGE_VERBS.values()):
        getattr(importlib.import_module(f"harness.ziti.{module}"), function)(edge_sub)
    if verb is None:
        from harness.ziti import account, fabric, verify

        verify.register(account.register_ops(sub))
        fabric.register(sub)
    return top


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["version"]:  # what suites call first and most: no parser, no HTTP client to import
        print(VERSION)
        return 0
    from harness.ziti.common import normalize_bools

    args = parser(argv).parse_args(normalize_bools(argv))
    return run(lambda: args.func(args), debug=args.debug, translators=(extra_errors, _errors))


def entry() -> None:
    """The console script ``ziti``."""
    without_unused_imports()
    exit_process(main())
