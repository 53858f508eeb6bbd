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


def shortest_paths(source: str, links: Iterable[Link], router_cost: Callable[[str], int] = lambda _: 0) -> dict:
    """``{router id: Path}`` for every router reachable from ``source`` over live links (either direction)."""
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
        if cost > best[here].cost:
            continue
        for there, link in sorted(graph.get(here, ()), key=lambda pair: (pair[1].cost, pair[1].id)):
            through = cost + link.cost + router_cost(there)
            if there not in best or through < best[there].cost:
                best[there] = Path(through, best[here].routers + (there,), best[here].links + (link.id,))
                heapq.heappush(queue, (through, there))
    return best


def pick(strategy: str, candidates: list[tuple[dict, Path]], rng: random.Random) -> tuple[dict, Path] | None:
    """One ``(terminator, path)`` of ``candidates`` as ``strategy`` says (None when there are none).

    ``smartrouting`` (and ``ha``): the lowest terminator cost plus path cost, ties broken at random;
    ``weighted``: at random, a terminator of total cost c weighted 1/(1+c); ``random``: uniformly.
    All within the best precedence present.
    """
    if not candidates:
        return None
    rank = min(PRECEDENCE_RANK.get(t.get("precedence") or "default", 1) for t, _ in candidates)
    tier = [(t, p) for t, p in candidates if PRECEDENCE_RANK.get(t.get("precedence") or "default", 1) == rank]

    def total(entry) -> int:
        return int(entry[0].get("cost") or 0) + entry[1].cost

    if strategy == "random":
        return rng.choice(tier)
    if strategy == "weighted":
        return rng.choices(tier, weights=[1 / (1 + total(entry)) for entry in tier])[0]
    lowest = min(total(entry) for entry in tier)
    return rng.choice([entry for entry in tier if total(entry) == lowest])
