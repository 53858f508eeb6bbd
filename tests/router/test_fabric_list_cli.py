"""``ziti fabric list links|circuits|terminators`` (a subprocess) on two linked routers with a circuit open.

The cells are the real command's: links by router names with latencies in ms and ``up``, a circuit's path
as ``r/<router> -> l/<link> -> r/<router>``, a terminator by service and router name.
"""

from __future__ import annotations

import re

from harness.dataplane.sync import SyncDataPlane, echo
from tests.ziti.conftest import Ziti


def rows(table: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("│").split("│")] for line in table.splitlines()[3:] if line.startswith("│")]


def test_links_circuits_and_terminators_as_the_real_tables_show_them(net, network_controller, tmp_path):
    ziti = Ziti(tmp_path)
    ziti.ok("edge", "login", network_controller.url, "-u", "admin", "-p", "admin")
    net.start("a"), net.start("b")
    net.wait_links(1)
    link = net.link_between("a", "b")
    service = net.service("listed")
    binder = net.identity("binder", service, "Bind", ["a"])
    dialer = net.identity("dialer", service, "Dial", ["b"])
    with SyncDataPlane.from_identity_file(binder) as host, SyncDataPlane.from_identity_file(dialer) as guest:
        host.bind(service, echo)
        with guest.dial(service) as conn:
            conn.sendall(b"ping")
            assert conn.recv_exactly(4) == b"ping"
            links = ziti.ok("fabric", "list", "links", f'id = "{link.id}"')
            circuits = ziti.ok(
                "fabric", "list", "circuits", f'service = "{net.ctl.access.services.find_by_name(service)["id"]}"'
            )
            terminators = ziti.ok("fabric", "list", "terminators", f'service.name = "{service}"')
    [row] = rows(links)
    assert row[0] == link.id and {row[1], row[2]} == {net.name("a"), net.name("b")}
    assert re.fullmatch(r"\d+\.\dms", row[4]) and re.fullmatch(r"\d+\.\dms", row[5])
    assert row[6] == "Connected" and row[7] == "up" and row[8].isdigit()
    [row] = rows(circuits)
    assert row[2] == service and re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", row[4])
    assert row[5] == f"r/{net.name('b')} -> l/{link.id} -> r/{net.name('a')}"
    [row] = rows(terminators)
    assert row[1:4] == [service, net.name("a"), "edge"]
    assert links.splitlines()[-1] == circuits.splitlines()[-1] == "results: 1-1 of 1"
