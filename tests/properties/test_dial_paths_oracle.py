"""The dial-path analysis (``harness.analysis.paths.dial_paths`` over ``/fabric/v1/routers/{id}/paths/{serviceId}``)
agrees with a brute-force oracle on random networks.

Hypothesis draws, over four routers: which the identity's and the service's policies give them, which are
online, their costs, live links between online routers (cost, down), terminators (router, cost, precedence,
binding), the service's strategy and whether a Dial policy grants the identity the service. The policies,
routers, terminators and strategy are set over the management API; router presence and links, which only
routers report, are set on the in-process controller's fabric as its control channel would. Then every
entry router, every terminator's usability, cheapest path cost (tried over every order of routers) and
the strategy's chance, and the reason no dial has a path, must be the oracle's.
"""

from __future__ import annotations

import itertools
import os
from datetime import datetime, timezone

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from controller.app import create_app
from controller.clock import FrozenClock
from controller.fabric.state import Link
from harness.analysis.paths import dial_paths
from harness.client import ZitiClient
from tests.sizes import size

EXAMPLES = int(os.environ.get("DIAL_PATH_EXAMPLES", size(30, 10)))
ROUTERS = ["r0", "r1", "r2", "r3"]
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
RANK = {"required": 0, "default": 1, "failed": 2}


@pytest.fixture(scope="module")
def world():
    """One controller for every example: an identity, a service, four routers and the policies between them."""
    app = create_app(clock=FrozenClock("2026-01-01T00:00:00Z"))
    admin = ZitiClient.in_process(app)
    admin.login("admin", "admin")
    mgmt = admin.management
    ids = {name: mgmt.create_edge_router(body={"name": name})["id"] for name in ROUTERS}
    identity = mgmt.create_identity(body={"name": "who", "type": "User", "isAdmin": False})["id"]
    service = mgmt.create_service(body={"name": "what", "roleAttributes": ["svc"], "encryptionRequired": True})["id"]
    mgmt.create_service_policy(
        body={
            "name": "dial",
            "type": "Dial",
            "semantic": "AnyOf",
            "identityRoles": ["#dialer"],
            "serviceRoles": ["#svc"],
        }
    )
    mgmt.create_edge_router_policy(
        body={"name": "erp", "semantic": "AnyOf", "identityRoles": ["#all"], "edgeRouterRoles": ["#id-ok"]}
    )
    mgmt.create_service_edge_router_policy(
        body={"name": "serp", "semantic": "AnyOf", "serviceRoles": ["#all"], "edgeRouterRoles": ["#svc-ok"]}
    )
    yield app, admin, ids, identity, service
    admin.close()
    app.controller.close()


def rarely(draw) -> bool:
    """True one time in eight, so that most examples get as far as a path."""
    return draw(st.integers(0, 7)) == 7


@st.composite
def subsets(draw) -> set[str]:
    return set() if rarely(draw) else draw(st.sets(st.sampled_from(ROUTERS), min_size=1))


@st.composite
def scenarios(draw) -> dict:
    online = draw(subsets())
    live = sorted(online)
    pairs = [(a, b) for a, b in itertools.combinations(live, 2)]
    drawn = st.lists(st.tuples(st.sampled_from(pairs), st.integers(1, 20), st.booleans()), max_size=6)
    links = [(a, b, cost, down) for (a, b), cost, down in draw(drawn)] if pairs else []
    return {
        "dial": not rarely(draw),
        "identity_routers": draw(subsets()),
        "service_routers": draw(subsets()),
        "online": online,
        "router_costs": {r: draw(st.integers(0, 5)) for r in ROUTERS},
        "links": links,
        "terminators": draw(
            st.lists(
                st.tuples(
                    st.sampled_from(ROUTERS),
                    st.integers(0, 20),
                    st.sampled_from(list(RANK)),
                    st.sampled_from(["edge", "edge", "transport"]),
                ),
                min_size=0 if rarely(draw) else 1,
                max_size=4,
            )
        ),
        "strategy": draw(st.sampled_from(["smartrouting", "weighted", "random"])),
    }


def setup(world, sc: dict) -> dict[str, dict]:
    """Put the scenario in place; return terminator id -> its row."""
    app, admin, ids, identity, service = world
    mgmt, ctl = admin.management, app.controller
    for terminator in list(mgmt.iterate("listTerminators")):
        mgmt.delete_terminator(terminator["id"])
    for link in ctl.routing.fabric.links():
        ctl.routing.fabric.link_down(link.id)
    mgmt.patch_identity(identity, body={"roleAttributes": ["dialer"] if sc["dial"] else []})
    mgmt.patch_service(service, body={"terminatorStrategy": sc["strategy"]})
    for name, router_id in ids.items():
        tags = [
            tag
            for tag, members in (("id-ok", sc["identity_routers"]), ("svc-ok", sc["service_routers"]))
            if name in members
        ]
        mgmt.patch_edge_router(router_id, body={"roleAttributes": tags, "cost": sc["router_costs"][name]})
        if name in sc["online"]:
            ctl.routing.router_presence.online(router_id, "tls://127.0.0.1:1")
        else:
            ctl.routing.router_presence.offline(router_id)
    for index, (a, b, cost, down) in enumerate(sc["links"]):
        ctl.routing.fabric.link_up(Link(f"link{index}", ids[a], ids[b], NOW, static_cost=cost, down=down))
    made = {}
    for router, cost, precedence, binding in sc["terminators"]:
        body = {"service": service, "router": ids[router], "binding": binding, "address": "x", "cost": cost}
        made[mgmt.create_terminator(body={**body, "precedence": precedence})["id"]] = {
            "router": router,
            "cost": cost,
            "precedence": precedence,
            "binding": binding,
        }
    return made


def cheapest(source: str, target: str, sc: dict) -> int | None:
    """The cheapest path's cost over live links, trying every order of the routers between (brute force)."""
    if source == target:
        return 0
    live = [(a, b, cost) for a, b, cost, down in sc["links"] if not down]

    def hop(a: str, b: str) -> int | None:
        costs = [cost for x, y, cost in live if {x, y} == {a, b}]
        return min(costs) if costs else None

    best = None
    others = [r for r in ROUTERS if r not in (source, target)]
    for count in range(len(others) + 1):
        for middle in itertools.permutations(others, count):
            route = (source, *middle, target)
            steps = [hop(a, b) for a, b in zip(route, route[1:])]
            if None in steps:
                continue
            total = sum(steps) + sum(sc["router_costs"][r] for r in route[1:])
            best = total if best is None or total < best else best
    return best


def expected_chances(strategy: str, usable: dict[str, int], terminators: dict[str, dict]) -> dict[str, float]:
    """Terminator id -> the chance the strategy picks it, from the usable ones' total costs."""
    if not usable:
        return {}
    rank = min(RANK[terminators[t]["precedence"]] for t in usable)
    tier = {t: total for t, total in usable.items() if RANK[terminators[t]["precedence"]] == rank}
    if strategy == "random":
        weights = {t: 1.0 for t in tier}
    elif strategy == "weighted":
        weights = {t: 1 / (1 + total) for t, total in tier.items()}
    else:
        low = min(tier.values())
        weights = {t: float(total == low) for t, total in tier.items()}
    return {t: weights.get(t, 0.0) / sum(weights.values()) for t in usable}


def expected_reason(sc: dict, common: list[str], reachable: bool) -> str:
    if not sc["dial"]:
        return "no Dial service policy"
    if not sc["identity_routers"]:
        return "no router: no edge router policy"
    if not sc["service_routers"]:
        return "no router: no service edge router policy"
    if not common:
        return "no router: none is both"
    if not set(common) & sc["online"]:
        return "no router online"
    if not sc["terminators"]:
        return "what has no terminators"
    return "" if reachable else "no path: "


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(sc=scenarios())
def test_dial_paths_agree_with_brute_force(world, sc):
    terminators = setup(world, sc)
    found = dial_paths(world[1], "who", "what")

    common = sorted(sc["identity_routers"] & sc["service_routers"])
    assert found.dial_allowed == sc["dial"]
    assert found.common == common == [entry.router for entry in found.entries]
    assert sorted(found.identity_routers) == sorted(sc["identity_routers"])
    assert sorted(found.service_routers) == sorted(sc["service_routers"])
    assert {name: found.online[name] for name in ROUTERS} == {name: name in sc["online"] for name in ROUTERS}
    reachable = False
    for entry in found.entries:
        assert entry.online == (entry.router in sc["online"])
        usable = {}
        for terminator_id, row in terminators.items():
            cost = cheapest(entry.router, row["router"], sc)
            if entry.online and row["binding"] == "edge" and row["router"] in sc["online"] and cost is not None:
                usable[terminator_id] = cost + row["cost"]
        chances = expected_chances(sc["strategy"], usable, terminators)
        routes = {route.terminator: route for route in entry.routes}
        assert set(routes) == set(terminators)
        for terminator_id, route in routes.items():
            assert route.usable == (terminator_id in usable), route
            assert route.chance == pytest.approx(chances.get(terminator_id, 0.0), abs=1e-5)
            if route.usable:
                assert route.total_cost == usable[terminator_id] and route.reason == ""
                assert route.path[0] == entry.router and route.path[-1] == terminators[terminator_id]["router"]
                steps = [{h.source, h.target} for h in route.hops]
                assert steps == [{a, b} for a, b in zip(route.path, route.path[1:])]
            else:
                assert route.reason and route.path == [] and route.total_cost is None
        assert entry.reachable == bool(usable)
        reachable = reachable or bool(usable)
    expected = expected_reason(sc, common, reachable)
    assert found.reason.startswith(expected) and bool(found.reason) == bool(expected), found.reason
    assert found.has_path == (not expected)
    event(f"reason: {expected or 'a path'}")
