"""Where a dial goes: the cheapest path over live links, and a terminator by the service's strategy.

Pure functions over plain records, so the router adapter, the fabric API and the notebooks' analysis can
all ask the same question. Costs follow the real controller's shape: a path costs the sum of its links'
costs (static cost plus measured latency, :attr:`~controller.fabric.state.Link.cost`) plus the cost of
every router it enters after the first; a terminator adds its own cost. Precedence comes first:
``required`` terminators are used while any is reachable, then ``default``, and ``failed`` only when
nothing else is.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass
from typing import Callable, Iterable

from controller.fabric.state import Link

PRECEDENCE_RANK = {"required": 0, "default": 1, "failed": 2}


@dataclass(frozen=True)
class Path:
    cost: int
    routers: tuple[str, ...]
    links: tuple[str, ...]


def shortest_paths(
    source: str,
    links: Iterable[Link],
    router_cost: Callable[[str], int] = lambda _: 0,
    transit: Callable[[str], bool] = lambda _: True,
) -> dict:
    """``{router id: Path}`` for every router reachable from ``source`` over live links (either direction).

    A router for which ``transit`` is false (the real router's ``noTraversal``) ends paths: it can be the
    first or the last router of a path, never one in between."""
    graph: dict[str, list[tuple[str, Link]]] = {}
    for link in links:
        if link.down:
            continue
        graph.setdefault(link.src_router_id, []).append((link.dst_router_id, link))
        graph.setdefault(link.dst_router_id, []).append((link.src_router_id, link))
    best = {source: Path(0, (source,), ())}
    queue = [(0, source)]
    while queue:
        cost, here = heapq.heappop(queue)
        if cost > best[here].cost or (here != source and not transit(here)):
            continue
        for there, link in sorted(graph.get(here, ()), key=lambda pair: (pair[1].cost, pair[1].id)):
            through = cost + link.cost + router_cost(there)
            if there not in best or through < best[there].cost:
                best[there] = Path(through, best[here].routers + (there,), best[here].links + (link.id,))
                heapq.heappush(queue, (through, there))
    return best


def router_costs(find: Callable[[str], dict | None]) -> Callable[[str], int]:
    """``router id -> cost`` from a record finder: the cost of entering a router on a path (0 when unknown)."""
    return lambda router_id: int((find(router_id) or {}).get("cost") or 0)


def transit_allowed(find: Callable[[str], dict | None]) -> Callable[[str], bool]:
    """``router id -> whether paths may cross it``: false for a router marked ``noTraversal``."""
    return lambda router_id: not (find(router_id) or {}).get("no_traversal")


def _rank(terminator: dict) -> int:
    return PRECEDENCE_RANK.get(terminator.get("precedence") or "default", 1)


def _total(entry: tuple[dict, Path]) -> int:
    """A candidate's cost: the terminator's own plus its path's."""
    return int(entry[0].get("cost") or 0) + entry[1].cost


def _tier(candidates: list[tuple[dict, Path]]) -> list[tuple[dict, Path]]:
    """The candidates of the best precedence present (``required``, else ``default``, else ``failed``)."""
    rank = min(_rank(t) for t, _ in candidates)
    return [(t, p) for t, p in candidates if _rank(t) == rank]


def pick(strategy: str, candidates: list[tuple[dict, Path]], rng: random.Random) -> tuple[dict, Path] | None:
    """One ``(terminator, path)`` of ``candidates`` as ``strategy`` says (None when there are none).

    ``smartrouting`` (and ``ha``): the lowest terminator cost plus path cost, ties broken at random;
    ``weighted``: at random, a terminator of total cost c weighted 1/(1+c); ``random``: uniformly.
    All within the best precedence present. :func:`chances` gives each candidate's probability.
    """
    if not candidates:
        return None
    tier = _tier(candidates)
    if strategy == "random":
        return rng.choice(tier)
    if strategy == "weighted":
        return rng.choices(tier, weights=[1 / (1 + _total(entry)) for entry in tier])[0]
    lowest = min(_total(entry) for entry in tier)
    return rng.choice([entry for entry in tier if _total(entry) == lowest])


def chances(strategy: str, candidates: list[tuple[dict, Path]]) -> list[float]:
    """The probability :func:`pick` chooses each of ``candidates`` (same order; 0 outside the best precedence)."""
    if not candidates:
        return []
    rank = min(_rank(t) for t, _ in candidates)
    tier = [index for index, (t, _) in enumerate(candidates) if _rank(t) == rank]
    if strategy == "random":
        weights = {index: 1.0 for index in tier}
    elif strategy == "weighted":
        weights = {index: 1 / (1 + _total(candidates[index])) for index in tier}
    else:
        lowest = min(_total(candidates[index]) for index in tier)
        weights = {index: float(_total(candidates[index]) == lowest) for index in tier}
    whole = sum(weights.values())
    return [weights.get(index, 0.0) / whole for index in range(len(candidates))]


@dataclass(frozen=True)
class Candidate:
    """One terminator of a service as seen from an entry router: its path there, or why it cannot be used."""

    terminator: dict
    path: Path | None
    reason: str = ""


def candidates(
    source: str,
    terminators: Iterable[dict],
    links: Iterable[Link],
    *,
    online: Callable[[str], bool],
    router_cost: Callable[[str], int] = lambda _: 0,
    transit: Callable[[str], bool] = lambda _: True,
    instance_id: str = "",
) -> list[Candidate]:
    """Every terminator with the cheapest path from router ``source`` to it, or the reason it is not a candidate.

    What a dial entering at ``source`` may use: an ``edge`` terminator (this project's routers host those),
    of the asked ``instance_id`` if any, on an online router reachable over live links.
    """
    paths = shortest_paths(source, links, router_cost, transit)
    out = []
    for terminator in terminators:
        router_id = terminator.get("router_id") or ""
        binding = terminator.get("binding") or ""
        if binding != "edge":
            out.append(Candidate(terminator, None, f"binding {binding!r}: only edge terminators are dialed"))
        elif instance_id and terminator.get("instance_id") != instance_id:
            out.append(Candidate(terminator, None, f"not instanceId {instance_id}"))
        elif not online(router_id):
            out.append(Candidate(terminator, None, f"its router {router_id} is offline"))
        elif router_id not in paths:
            out.append(Candidate(terminator, None, f"no live link path from router {source} to router {router_id}"))
        else:
            out.append(Candidate(terminator, paths[router_id]))
    return out


def usable(found: Iterable[Candidate]) -> list[tuple[dict, Path]]:
    """The ``(terminator, path)`` pairs :func:`pick` chooses from."""
    return [(c.terminator, c.path) for c in found if c.path is not None]
