"""``ziti fabric list circuits|controllers|links|routers|services|terminators [FILTER]``.

The real command's tables: the same columns, cells and paging line, a filter
as the one optional positional argument, ``--csv`` (no paging line after it)
and ``-j/--output-json`` (the controller's response as it came). Routers,
links, circuits, services and terminators come from the fabric API
(``/fabric/v1``), controllers from the edge management API.
"""

from __future__ import annotations

from datetime import datetime, timezone

from harness.ziti import table
from harness.ziti.common import Parser, add_common, print_json

#: kind -> (API, path, headers, row builder, columns always right-aligned (0-based))
KINDS: dict = {}


def _kind(name: str, api: str, headers: list[str], right: tuple[int, ...] = ()):
    def register(row_of):
        KINDS[name] = (api, "/" + name, headers, row_of, right)
        return row_of

    return register


def _name(ref) -> str:
    return (ref or {}).get("name") or ""


@_kind("circuits", "fabric", ["ID", "Client", "Service", "Terminator", "CreatedAt", "Path"])
def _circuit(e: dict) -> list:
    path = e.get("path") or {}
    nodes, links = path.get("nodes") or [], path.get("links") or []
    label = f"r/{_name(nodes[0])}" if nodes else ""
    for at, node in enumerate(nodes[1:]):
        link_id = (links[at] or {}).get("id") if at < len(links) else ""
        label += f" -> l/{link_id} -> r/{_name(node)}"
    return [
        e.get("id"),
        e.get("clientId"),
        _name(e.get("service")),
        (e.get("terminator") or {}).get("id"),
        _date_time(e.get("createdAt")),
        label,
    ]


@_kind(
    "controllers",
    "management",
    ["ID", "Name", "Last Connected", "IsOnline (only valid if cluster has leader)", "Preferred Leader"],
)
def _controller(e: dict) -> list:
    joined = e.get("lastJoinedAt")
    return [e.get("id"), e.get("name"), joined or "never", bool(e.get("isOnline")), bool(e.get("isPreferredLeader"))]


@_kind(
    "links",
    "fabric",
    [
        "ID",
        "Dialer",
        "Acceptor",
        "Static Cost",
        "Src Latency",
        "Dst Latency",
        "State",
        "Status",
        "Full Cost",
        "Connections",
    ],
    right=(4, 5, 7),
)
def _link(e: dict) -> list:
    connections = [f"{c.get('type')}: {c.get('source')} -> {c.get('dest')}" for c in e.get("connections") or []]
    return [
        e.get("id") or "",
        _name(e.get("sourceRouter")),
        _name(e.get("destRouter")),
        e.get("staticCost") or 0,
        f"{(e.get('sourceLatency') or 0) / 1_000_000:.1f}ms",
        f"{(e.get('destLatency') or 0) / 1_000_000:.1f}ms",
        e.get("state") or "",
        "down" if e.get("down") else "up",
        e.get("cost") or 0,
        "\n".join(connections),
    ]


@_kind("routers", "fabric", ["ID", "Name", "Online", "Cost", "No Traversal", "Disabled", "Version", "Listeners"])
def _router(e: dict) -> list:
    info = e.get("versionInfo")
    version = f"{info.get('version')} on {info.get('os')}/{info.get('arch')}" if info else ""
    listeners = [f"{at}: {(a or {}).get('address') or ''}" for at, a in enumerate(e.get("listenerAddresses") or [], 1)]
    return [
        e.get("id") or "",
        e.get("name") or "",
        bool(e.get("connected")),
        e.get("cost") or 0,
        bool(e.get("noTraversal")),
        bool(e.get("disabled")),
        version,
        "\n".join(listeners),
    ]


@_kind("services", "fabric", ["ID", "Name", "Terminator Strategy"])
def _service(e: dict) -> list:
    return [e.get("id") or "", e.get("name") or "", e.get("terminatorStrategy") or ""]


@_kind(
    "terminators",
    "fabric",
    ["ID", "Service", "Router", "Binding", "Address", "Instance", "Cost", "Precedence", "Dynamic Cost", "Host ID"],
)
def _terminator(e: dict) -> list:
    return [
        e.get("id") or "",
        _name(e.get("service")),
        _name(e.get("router")),
        e.get("binding") or "",
        e.get("address") or "",
        e.get("instanceId") or "",
        e.get("cost") or 0,
        e.get("precedence") or "",
        e.get("dynamicCost") or 0,
        e.get("hostId") or "",
    ]


def _date_time(value: str | None) -> str:
    """``2026-11-28 15:04:05`` in UTC, as the real table shows ``createdAt``."""
    if not value:
        return ""
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _numeric_columns(rows: list[list]) -> set[int]:
    """Columns whose every cell is a number: go-pretty right-aligns those."""
    if not rows:
        return set()
    return {
        at
        for at in range(len(rows[0]))
        if all(isinstance(row[at], (int, float)) and not isinstance(row[at], bool) for row in rows)
    }


def cmd_list(args) -> int:
    from harness.client import ApiError
    from harness.ziti.session import saved_client

    api, path, headers, row_of, right = KINDS[args.kind]
    params = {"filter": args.filter} if args.filter else {}
    with saved_client(args.cli_identity, args.timeout) as client:
        response = (client.fabric if api == "fabric" else client.mgmt)("GET", path, params=params)
    if response.status_code >= 300:
        raise ApiError(response)
    if args.output_json:
        print_json(response)
        return 0
    payload = response.json()
    rows = [row_of(entity) for entity in payload.get("data") or []]
    if args.csv:
        import csv
        import sys

        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(headers)
        writer.writerows([[table.cell(v) for v in row] for row in rows])
        return 0
    print(table.render(headers, rows, right=set(right) | _numeric_columns(rows)))
    print(table.paging_line(payload.get("meta"), len(rows)))
    return 0


def register(top_sub) -> None:
    """``ziti fabric`` and its ``list`` (alias ``ls``) commands."""
    fabric = top_sub.add_parser("fabric", help="manages the fabric (routers, links, circuits) of a Ziti network")
    fabric_sub = fabric.add_subparsers(dest="fabric_verb", required=True, metavar="VERB", parser_class=Parser)
    listing = fabric_sub.add_parser(
        "list", aliases=["ls"], help="Lists various entities managed by the Ziti Controller"
    )
    kinds = listing.add_subparsers(dest="kind", required=True, metavar="KIND", parser_class=Parser)
    for kind in KINDS:
        p = kinds.add_parser(kind, help=f"lists {kind} managed by the Ziti Controller")
        p.add_argument("filter", nargs="?", default=None, help="a filter, e.g. 'name contains \"x\" limit 100'")
        p.add_argument("--csv", action="store_true", help="Output CSV instead of a formatted table")
        add_common(p)
        p.set_defaults(func=cmd_list)
