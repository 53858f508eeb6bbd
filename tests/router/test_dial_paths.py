"""The dial-path analysis (``harness.analysis.paths.dial_paths``) names the entry router, path and terminator a real
dial then uses, follows link changes, and says why no dial has a path.

In-process routers linked over TLS on one controller reached over HTTPS; binders and dialers are the
harness's data plane with enrolled identity files, so every prediction is checked against the circuit the
controller actually builds (``GET /fabric/v1/circuits``).
"""

from __future__ import annotations

import time

import pytest

from harness.analysis.paths import dial_paths
from harness.dataplane.sync import SyncDataPlane, echo


def dial_once(ziti_admin, guest: SyncDataPlane, service: str) -> tuple[list[str], str]:
    """Dial and echo; the router names and terminator id of the circuit the controller built for it."""
    with guest.dial(service) as conn:
        conn.sendall(b"ping")
        assert conn.recv_exactly(4) == b"ping"
        circuits = [c for c in ziti_admin.fabric.list_circuits() if c["service"]["name"] == service]
        circuit = max(circuits, key=lambda c: c["createdAt"])  # this dial's: the newest
    return [node["name"] for node in circuit["path"]["nodes"]], circuit["terminator"]["id"]


def wait_terminators(ziti_admin, service: str, count: int = 1) -> list[dict]:
    deadline = time.monotonic() + 20  # a real binder's bind reaching the controller
    while len(found := ziti_admin.management.list_terminators(filter=f'service.name = "{service}"')) < count:
        assert time.monotonic() < deadline, f"{service}: {count} terminator(s)"
        time.sleep(0.02)
    return found


def set_link(net, a: str, b: str, **body) -> None:
    net.admin.fabric.patch_link(net.link_between(a, b).id, body=body)


def test_the_analysis_names_the_entry_router_path_and_terminator_a_real_dial_uses_and_follows_a_cut_link(net):
    for short in "abc":
        net.start(short)
    net.wait_links(3)
    set_link(net, "a", "b", staticCost=1000)  # b reaches a through c while the c links are up
    service = net.service("route")
    binder = net.identity("binder", service, "Bind", ["a"])
    dialer = net.identity("dialer", service, "Dial", ["b"])
    a, b, c = (net.name(short) for short in "abc")
    with SyncDataPlane.from_identity_file(binder) as host, SyncDataPlane.from_identity_file(dialer) as guest:
        host.bind(service, echo)
        [terminator] = wait_terminators(net.admin, service)

        found = dial_paths(net.admin, net.name("dialer"), service)
        assert found.has_path and found.reason == "" and found.dial_allowed
        assert found.identity_routers == {b: [net.name("dialer")]}  # by the dialer's own edge router policy
        assert {a, b, c} <= set(found.service_routers) and found.service_routers[b] == ["all-all"]
        assert found.common == [b] and all(found.online[r] for r in (a, b, c))
        assert found.strategy == "smartrouting"
        assert found.terminators == [
            {"id": terminator["id"], "router": a, "cost": 0, "precedence": "default", "binding": "edge"}
        ]
        [entry] = found.entries
        route = entry.likely
        assert (entry.router, route.terminator, route.path, route.chance) == (b, terminator["id"], [b, c, a], 1.0)
        assert [(h.source, h.target) for h in route.hops] == [(b, c), (c, a)]
        assert [h.link for h in route.hops] == [net.link_between("b", "c").id, net.link_between("c", "a").id]
        assert route.total_cost == sum(h.cost for h in route.hops) + route.cost  # routers here cost 0
        assert found.headline().startswith(f"{net.name('dialer')} CAN dial {service}: e.g. in at {b}, {b} > {c} > {a}")
        assert dial_once(net.admin, guest, service) == ([b, c, a], terminator["id"])

        set_link(net, "b", "c", down=True)  # the cheap way is cut: the dear direct link is left
        route = dial_paths(net.admin, net.name("dialer"), service).likely
        assert route.path == [b, a] and route.hops[0].static_cost == 1000
        assert dial_once(net.admin, guest, service) == ([b, a], terminator["id"])

        set_link(net, "a", "b", down=True)  # and now no way at all
        found = dial_paths(net.admin, net.name("dialer"), service)
        assert not found.has_path and found.likely is None
        assert found.reason == (
            f"no path: from {b}: no terminator can be reached: no live link path from router {b} to router {a}"
        )
        assert "CANNOT dial" in found.headline() and found.frame()["why not"].tolist() == [
            f"no live link path from router {b} to router {a}"
        ]


def test_an_identity_without_an_edge_router_policy_gets_no_router_with_the_reason(net):
    net.start("a")
    service = net.service("lost")
    net.admin.management.create_identity(
        body={"name": net.name("lost"), "type": "User", "isAdmin": False, "roleAttributes": [net.name("lost")]}
    )
    net.admin.management.create_service_policy(
        body={
            "name": net.name("lost"),
            "type": "Dial",
            "semantic": "AnyOf",
            "identityRoles": [f"#{net.name('lost')}"],
            "serviceRoles": [f"#{service}"],
        }
    )
    found = dial_paths(net.admin, net.name("lost"), service)
    assert found.dial_allowed and not found.has_path
    assert found.reason == f"no router: no edge router policy gives {net.name('lost')} a router"
    assert found.identity_routers == {} and found.common == [] and found.entries == []
    assert net.name("a") in found.service_routers  # the service has routers: the identity has none

    # given a router that then goes offline, the reason moves on to that
    net.admin.management.create_edge_router_policy(
        body={
            "name": net.name("lost"),
            "semantic": "AnyOf",
            "identityRoles": [f"#{net.name('lost')}"],
            "edgeRouterRoles": [f"#{net.name('a')}"],
        }
    )
    assert dial_paths(net.admin, net.name("lost"), service).reason == f"{service} has no terminators: nothing binds it"
    net.stop("a")
    found = dial_paths(net.admin, net.name("lost"), service)
    assert found.reason == (
        f"no router online: every router {net.name('lost')} may dial {service} through is offline ({net.name('a')})"
    )
    [entry] = found.entries
    assert not entry.online and entry.reason == f"router {net.name('a')} is offline: no dial enters there"


def test_unknown_names_are_a_lookup_error_naming_them(net):
    service = net.service("known")
    who = net.name("known")
    net.admin.management.create_identity(body={"name": who, "type": "User", "isAdmin": False})
    with pytest.raises(LookupError, match="no identity named 'nobody'"):
        dial_paths(net.admin, "nobody", service)
    with pytest.raises(LookupError, match="no service named 'nothing'"):
        dial_paths(net.admin, who, "nothing")
    assert dial_paths(net.admin, who, service).reason == f"no Dial service policy grants {who} {service}"
