"""Generate networks of the real controller's benchmark shapes.

The real controller's performance scenarios name their shapes by
(services, identities, edge routers, service policies, edge router policies,
service edge router policies); eight attributes are spread over 1/2, 1/2, 1/3,
1/4, 1/5, 1/8, 1/10 and 1/10 of each population, and policies are AnyOf
permutations of attributes plus ``#all`` and ``@name`` ones. ``realistic``
(:mod:`harness.network.realistic`) is a company to analyse rather than to time.
"""

from __future__ import annotations

import itertools
import random

SHAPES = {
    "baseline": (1, 1, 1, 1, 1, 1),
    "small": (20, 100, 10, 10, 10, 10),
    "medium": (100, 5_000, 100, 50, 50, 25),
    "large": (2_000, 100_000, 500, 250, 250, 100),
    "many-services": (10_000, 16_000, 100, 100, 100, 100),
}
#: every shape ``generate`` makes: the sized ones, then ``realistic``
SHAPE_NAMES = [*sorted(SHAPES), "realistic"]
SPREAD = (2, 2, 3, 4, 5, 8, 10, 10)
ATTRIBUTES = [f"attr{i}" for i in range(len(SPREAD))]


def spread_attributes(index: int) -> list[str]:
    """The attributes entity ``index`` carries: attribute k on every SPREAD[k]-th entity."""
    return [ATTRIBUTES[k] for k, every in enumerate(SPREAD) if (index + k) % every == 0]


def _roles(rng: random.Random, index: int, names: list[str]) -> list[str]:
    if index % 10 == 0:
        return ["#all"]
    if index % 10 == 1 and names:
        return ["@" + rng.choice(names)]
    count = 1 + index % 3
    combos = list(itertools.combinations(ATTRIBUTES, count))
    return ["#" + a for a in combos[index % len(combos)]]


def generate(shape: str = "small", seed: int = 7) -> dict:
    """A network dict of the named shape (see ``SHAPES``), or ``"realistic"`` (see ``harness.network.realistic``)."""
    if shape == "realistic":
        from harness.network.realistic import realistic

        return realistic(seed=seed)
    services, identities, routers, sps, erps, serps = SHAPES[shape]
    rng = random.Random(seed)
    svc = [f"svc-{i:05d}" for i in range(services)]
    ids = [f"id-{i:06d}" for i in range(identities)]
    ers = [f"er-{i:04d}" for i in range(routers)]
    network = {
        "services": [{"name": n, "roleAttributes": spread_attributes(i)} for i, n in enumerate(svc)],
        "edgeRouters": [{"name": n, "roleAttributes": spread_attributes(i)} for i, n in enumerate(ers)],
        "identities": [{"name": n, "roleAttributes": spread_attributes(i)} for i, n in enumerate(ids)],
        "servicePolicies": [
            {
                "name": f"sp-{i:04d}",
                "type": "Dial" if i % 2 == 0 else "Bind",
                "semantic": "AnyOf",
                "identityRoles": _roles(rng, i, ids),
                "serviceRoles": _roles(rng, i + 3, svc),
            }
            for i in range(sps)
        ],
        "edgeRouterPolicies": [
            {
                "name": f"erp-{i:04d}",
                "semantic": "AnyOf",
                "identityRoles": _roles(rng, i, ids),
                "edgeRouterRoles": _roles(rng, i + 5, ers),
            }
            for i in range(erps)
        ],
        "serviceEdgeRouterPolicies": [
            {
                "name": f"serp-{i:04d}",
                "semantic": "AnyOf",
                "serviceRoles": _roles(rng, i, svc),
                "edgeRouterRoles": _roles(rng, i + 7, ers),
            }
            for i in range(serps)
        ],
    }
    return network


def main(argv=None) -> int:
    import argparse
    import sys

    import yaml

    parser = argparse.ArgumentParser(
        prog="python -m harness.network.generate", description="print a network of a benchmark shape"
    )
    parser.add_argument("shape", choices=SHAPE_NAMES)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    sys.stdout.write(yaml.safe_dump(generate(args.shape, args.seed), sort_keys=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
