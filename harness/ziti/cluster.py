"""``ziti ops cluster list|add|remove|transfer-leadership``: the fabric API's cluster operations, as the real CLI."""

from __future__ import annotations

from harness.ziti import table
from harness.ziti.common import add_common, bool_flag, print_json

HEADERS = ["Id", "Address", "Voter", "Leader", "Version", "Connected", "ReadOnly", "Preferred"]


def _call(args, method: str, path: str, body: dict | None = None):
    from harness.client import ApiError
    from harness.ziti.session import saved_client

    with saved_client(args.cli_identity, args.timeout) as client:
        response = client.fabric(method, path, json=body) if body is not None else client.fabric(method, path)
    if response.status_code >= 300:
        raise ApiError(response)
    return response


def cmd_list(args) -> int:
    response = _call(args, "GET", "/cluster/list-members")
    if args.output_json:
        print_json(response)
        return 0
    rows = [
        [
            m["id"],
            m["address"],
            m["voter"],
            m["leader"],
            m["version"],
            m["connected"],
            bool(m.get("readOnly")),
            bool(m.get("preferredLeader")),
        ]
        for m in response.json().get("data") or []
    ]
    print(table.render(HEADERS, rows))
    return 0


def cmd_add(args) -> int:
    _call(args, "POST", "/cluster/add-member", {"address": args.address, "isVoter": not args.non_voting})
    return 0


def cmd_remove(args) -> int:
    _call(args, "POST", "/cluster/remove-member", {"id": args.member_id})
    return 0


def cmd_transfer_leadership(args) -> int:
    _call(args, "POST", "/cluster/transfer-leadership", {"newLeaderId": args.member_id or ""})
    return 0


def register(cluster_sub) -> None:
    """The verbs beside ``ziti ops cluster recover``."""
    p = cluster_sub.add_parser("list", help="list cluster members and their status")
    add_common(p)
    p.set_defaults(func=cmd_list)
    p = cluster_sub.add_parser("add", help="add cluster member")
    p.add_argument("address", help="the member's address, e.g. tls:127.0.0.1:2002")
    bool_flag(p, "--non-voting", dest="non_voting", help="Allows adding a non-voting member to the cluster")
    add_common(p)
    p.set_defaults(func=cmd_add)
    p = cluster_sub.add_parser("remove", help="remove cluster member")
    p.add_argument("member_id", metavar="cluster-member-id", help="the id of the member to remove")
    add_common(p)
    p.set_defaults(func=cmd_remove)
    p = cluster_sub.add_parser(
        "transfer-leadership",
        help="transfer cluster leadership to another member",
        description="transfer cluster leadership to another member. "
        "If a node id is specified, leadership will be transferred to that node",
    )
    p.add_argument("member_id", nargs="?", default=None, metavar="cluster-member-id", help="the new leader's id")
    add_common(p)
    p.set_defaults(func=cmd_transfer_leadership)
