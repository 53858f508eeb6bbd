"""``ziti-harness`` subcommands that look at a controller, as ``ziti edge`` does.

* ``list KIND [FILTER]``, ``show KIND NAME``, ``delete KIND NAME`` (``-j`` prints JSON);
* ``explain IDENTITY SERVICE [--bind]``: why access is (not) given, and the smallest change;
* ``policy-advisor identities|services [NAME]``: every granted pair, flagged when unusable;
* ``generate SHAPE``: a network file of a benchmark shape on standard output.
"""

from __future__ import annotations

import difflib
import json
import sys

from controller.console import FAILED, USAGE, CliError
from controller.entities import kebab
from harness.client.filters import name_is
from harness.client.kinds import KINDS, Kind

#: ``ziti edge`` spellings: identities, service-policies, edge-routers, ...
KIND_NAMES = {
    **{kebab(kind.key): kind for kind in KINDS},
    "transit-routers": next(kind for kind in KINDS if kind.key == "routers"),
    "ext-jwt-signers": next(kind for kind in KINDS if kind.key == "externalJwtSigners"),
}
#: and singular: identity, service-policy, edge-router, ...
KIND_NAMES.update({kebab(kind.singular): kind for kind in KINDS})
SINGULAR = {name for name in KIND_NAMES if not name.endswith("s")} - {"cas"}
#: columns of the text listing, besides id and name
COLUMNS = ("type", "roleAttributes", "identityRoles", "serviceRoles", "edgeRouterRoles", "semantic")


def kind_named(text: str) -> Kind:
    kind = KIND_NAMES.get(text)
    if kind is None:
        close = difflib.get_close_matches(text, list(KIND_NAMES), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise CliError(f"unknown kind {text!r}: {hint}kinds are {', '.join(sorted(set(KIND_NAMES) - SINGULAR))}", USAGE)
    return kind


def _find(client, kind: Kind, name: str) -> dict:
    found = list(client.management.iterate(kind.list_op, filter=name_is(name)))
    if not found:
        raise CliError(f"no {kind.key} named {name!r} (ziti-harness list {_spelling(kind)} lists them)", FAILED)
    return found[0]


def _spelling(kind: Kind) -> str:
    return next(text for text, known in KIND_NAMES.items() if known is kind)


def _print_json(value) -> None:
    sys.stdout.write(json.dumps(value, indent=2, sort_keys=True) + "\n")


def cmd_list(args) -> int:
    from harness.cli import connect

    kind = kind_named(args.kind)
    query = {"filter": args.filter} if args.filter else {}
    with connect(args) as client:
        records = list(client.management.iterate(kind.list_op, page_size=500, **query))
    if args.json:
        _print_json(records)
        return 0
    for record in records:
        extra = [f"{column}={_short(record[column])}" for column in COLUMNS if record.get(column) not in (None, [], "")]
        print(f"{record['id']:<12} {record['name']:<32} {' '.join(extra)}".rstrip())
    print(f"{len(records)} {kind.key}")
    return 0


def _short(value) -> str:
    if isinstance(value, dict):
        return value.get("name") or value.get("id") or json.dumps(value)
    return ",".join(value) if isinstance(value, list) else str(value)


def cmd_show(args) -> int:
    from harness.cli import connect

    kind = kind_named(args.kind)
    with connect(args) as client:
        record = client.management.call(f"detail{kind.singular}", _find(client, kind, args.name)["id"])
    if args.json:
        _print_json(record)
    else:
        for key in sorted(record):
            if key != "_links":
                print(f"{key}: {json.dumps(record[key], sort_keys=True)}")
    return 0


def cmd_delete(args) -> int:
    from harness.cli import connect

    kind = kind_named(args.kind)
    with connect(args) as client:
        client.management.call(kind.delete_op, _find(client, kind, args.name)["id"])
    print(f"deleted {kind.key}/{args.name}")
    return 0


def _analysis(args):
    from harness.analysis import Analysis
    from harness.cli import connect

    with connect(args) as client:
        return Analysis.from_controller(client)


def _known(name: str, names, what: str) -> str:
    if name not in names:
        close = difflib.get_close_matches(name, list(names), n=1)
        raise CliError(f"no {what} named {name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""), FAILED)
    return name


def cmd_explain(args) -> int:
    analysis = _analysis(args)
    identity = _known(args.identity, analysis.identities, "identity")
    service = _known(args.service, analysis.services, "service")
    explanation = analysis.explain(identity, service, "Bind" if args.bind else "Dial")
    if args.json:
        _print_json(explanation.to_dict())
    else:
        print(explanation)
    return 0


def advise(analysis, identity: str, service: str) -> tuple[str, str]:
    """``(OKAY|ERROR, line)`` for one granted pair, in the spirit of ``ziti edge policy-advisor``."""
    advice = analysis.advice(identity, service)
    common = len(advice["commonRouters"])
    line = (
        f"{identity} ({advice['identityRouterCount']}) -> {service} ({advice['serviceRouterCount']}) "
        f"Common Routers: ({common}) Dial: {'Y' if advice['isDialAllowed'] else 'N'} "
        f"Bind: {'Y' if advice['isBindAllowed'] else 'N'}"
    )
    if common:
        return "OKAY", line
    if not advice["identityRouterCount"]:
        return "ERROR", line + " - the identity may use no edge router"
    if not advice["serviceRouterCount"]:
        return "ERROR", line + " - the service is served by no edge router"
    return "ERROR", line + " - no edge router is shared"


def cmd_policy_advisor(args) -> int:
    analysis = _analysis(args)
    by_identity = args.side == "identities"
    names = analysis.identities if by_identity else analysis.services
    chosen = [_known(args.name, names, args.side[:-1] if by_identity else "service")] if args.name else sorted(names)
    errors = 0
    for name in chosen:
        others = analysis.services_of(name) if by_identity else analysis.identities_of(name)
        if not others:
            print(f"WARN : {name} - {'not granted any service' if by_identity else 'no identity may use it'}")
        for other in others:
            status, line = advise(analysis, *((name, other) if by_identity else (other, name)))
            errors += status == "ERROR"
            print(f"{status:<5}: {line}")
    return 1 if errors else 0


def cmd_generate(args) -> int:
    import yaml

    from harness.network.generate import generate

    sys.stdout.write(yaml.safe_dump(generate(args.shape, args.seed), sort_keys=False))
    return 0


def register(sub, common) -> None:
    from harness.cli import remote
    from harness.network.generate import SHAPE_NAMES

    def command(name: str, func, help: str, *, json_output: bool = True):
        parser = sub.add_parser(name, parents=[common], help=help, description=help)
        if json_output:
            parser.add_argument("-j", "--json", action="store_true", help="print JSON instead of text")
        remote(parser)
        parser.set_defaults(func=func)
        return parser

    kinds = ", ".join(sorted(KIND_NAMES))
    listing = command("list", cmd_list, "list the entities of a kind")
    listing.add_argument("kind", help=f"one of {kinds}")
    listing.add_argument("filter", nargs="?", help="a filter, e.g. 'name contains \"sales\"' (default all)")
    show = command("show", cmd_show, "show one entity by name")
    show.add_argument("kind", help=f"one of {kinds}")
    show.add_argument("name", help="the entity's name")
    delete = command("delete", cmd_delete, "delete one entity by name", json_output=False)
    delete.add_argument("kind", help=f"one of {kinds}")
    delete.add_argument("name", help="the entity's name")
    explain = command("explain", cmd_explain, "explain why an identity can or cannot reach a service")
    explain.add_argument("identity", help="identity name")
    explain.add_argument("service", help="service name")
    explain.add_argument("--bind", action="store_true", help="explain hosting (Bind) instead of dialing")
    advisor = command(
        "policy-advisor",
        cmd_policy_advisor,
        "check that every granted identity/service pair shares an edge router (exit 1 if not)",
        json_output=False,
    )
    advisor.add_argument("side", choices=["identities", "services"], help="go through identities or services")
    advisor.add_argument("name", nargs="?", help="only this identity or service (default all)")
    gen = sub.add_parser("generate", parents=[common], help="print a generated network file of a shape")
    gen.add_argument("shape", choices=SHAPE_NAMES, help="the network's size, or realistic (a company to analyse)")
    gen.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    gen.set_defaults(func=cmd_generate)
