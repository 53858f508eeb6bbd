"""Path and terminator choice (controller/fabric/routing.py) against brute force, over generated networks."""

from __future__ import annotations

import itertools
import random
from datetime import datetime, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.fabric.routing import Path, chances, pick, shortest_paths
from controller.fabric.state import Link

ROUTERS = "abcde"
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)

links_strategy = st.lists(
    st.tuples(st.sampled_from(ROUTERS), st.sampled_from(ROUTERS), st.integers(1, 50), st.booleans()), max_size=10
).map(
    lambda rows: [
        Link(f"l{i}", src, dst, NOW, static_cost=cost, down=down)
        for i, (src, dst, cost, down) in enumerate(rows)
        if src != dst
    ]
)


def brute_force(source: str, target: str, links: list[Link], no_traversal: frozenset = frozenset()) -> int | None:
    """The cheapest simple path's cost by trying every ordering of intermediate routers (never one of
    ``no_traversal`` in between)."""
    live = [link for link in links if not link.down]

    def hop(a: str, b: str) -> int | None:
        costs = [link.cost for link in live if {link.src_router_id, link.dst_router_id} == {a, b}]
        return min(costs) if costs else None

    if source == target:
        return 0
    best = None
    others = [r for r in ROUTERS if r not in (source, target) and r not in no_traversal]
    for size in range(len(others) + 1):
        for middle in itertools.permutations(others, size):
            route = (source, *middle, target)
            steps = [hop(a, b) for a, b in zip(route, route[1:])]
            if None not in steps and (best is None or sum(steps) < best):
                best = sum(steps)
    return best


@settings(max_examples=60, deadline=None)
@given(links_strategy, st.sampled_from(ROUTERS))
def test_shortest_paths_are_the_cheapest_over_live_links(links, source):
    paths = shortest_paths(source, links)
    by_id = {link.id: link for link in links}
    for target in ROUTERS:
        expected = brute_force(source, target, links)
        if expected is None:
            assert target not in paths
            continue
        path = paths[target]
        assert path.cost == expected and path.routers[0] == source and path.routers[-1] == target
        assert len(path.links) == len(path.routers) - 1
        for (a, b), link_id in zip(zip(path.routers, path.routers[1:]), path.links):
            link = by_id[link_id]
            assert {link.src_router_id, link.dst_router_id} == {a, b} and not link.down


@settings(max_examples=60, deadline=None)
@given(links_strategy, st.sampled_from(ROUTERS), st.frozensets(st.sampled_from(ROUTERS)))
def test_a_no_traversal_router_ends_paths_and_is_never_crossed(links, source, no_traversal):
    paths = shortest_paths(source, links, transit=lambda router_id: router_id not in no_traversal)
    for target in ROUTERS:
        expected = brute_force(source, target, links, no_traversal)
        if expected is None:
            assert target not in paths
            continue
        assert paths[target].cost == expected
        assert not no_traversal.intersection(paths[target].routers[1:-1])


terminators_strategy = st.lists(
    st.tuples(st.integers(0, 100), st.sampled_from(["required", "default", "failed"]), st.integers(0, 100)),
    min_size=1,
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(terminators_strategy, st.sampled_from(["smartrouting", "weighted", "random", "ha"]), st.integers(0, 2**32))
def test_pick_stays_in_the_best_precedence_and_smartrouting_takes_the_cheapest(rows, strategy, seed):

    candidates = [
        ({"id": f"t{i}", "cost": cost, "precedence": precedence}, Path(path_cost, ("a",), ()))
        for i, (cost, precedence, path_cost) in enumerate(rows)
    ]
    chosen, path = pick(strategy, candidates, random.Random(seed))
    rank = {"required": 0, "default": 1, "failed": 2}
    best = min(rank[t["precedence"]] for t, _ in candidates)
    assert rank[chosen["precedence"]] == best
    if strategy in ("smartrouting", "ha"):
        tier = [t["cost"] + p.cost for t, p in candidates if rank[t["precedence"]] == best]
        assert chosen["cost"] + path.cost == min(tier)


def test_pick_without_candidates_is_none():
    assert pick("smartrouting", [], random.Random(1)) is None


@settings(max_examples=60, deadline=None)
@given(terminators_strategy, st.sampled_from(["smartrouting", "weighted", "random", "ha"]))
def test_chances_are_what_pick_does(rows, strategy):
    """The chances the fabric API's path answer shows: they sum to 1, and pick only ever takes a candidate
    with a chance (over many dice), taking every one of them; the uniform strategies share equally."""
    candidates = [
        ({"id": f"t{i}", "cost": cost, "precedence": precedence}, Path(path_cost, ("a",), ()))
        for i, (cost, precedence, path_cost) in enumerate(rows)
    ]
    odds = chances(strategy, candidates)
    assert len(odds) == len(candidates) and abs(sum(odds) - 1) < 1e-9
    picked = {pick(strategy, candidates, random.Random(seed))[0]["id"] for seed in range(400)}
    possible = {t["id"] for (t, _), chance in zip(candidates, odds) if chance > 0}
    assert picked <= possible
    if all(chance > 0.05 for chance in odds if chance > 0):  # each one likely enough to show in 400 picks
        assert picked == possible
    if strategy != "weighted":
        assert len({round(chance, 9) for chance in odds if chance > 0}) == 1


def test_chances_without_candidates_are_empty():
    assert chances("weighted", []) == []
