"""Policy analysis speed: the access matrix and explanations on generated networks.

Run: ``python -m benchmarks.analysis`` (``--quick`` for smaller shapes).

* matrix: a network of 2,000 identities x 1,000 services (100 edge routers,
  100 service policies, 100 edge router policies, 50 service edge router
  policies, shaped as :mod:`harness.network.generate` does): build the analysis, then
  every cell's dial/bind/shared-router code, the counts and the DataFrame.
  Target: a few seconds.
* explain: p50/p95 of :meth:`Analysis.explain` at the ``large`` shape of
  :mod:`harness.network.generate` (100,000 identities, 2,000 services). Target: p50
  under 100 ms.
"""

from __future__ import annotations

import random
import resource
import statistics
import sys
import time

from harness.analysis import Analysis
from harness.network import generate

#: (services, identities, edge routers, service policies, edge router policies, service edge router policies)
MATRIX_SHAPE = (1_000, 2_000, 100, 100, 100, 50)
QUICK_MATRIX_SHAPE = (200, 400, 20, 20, 20, 10)


def _network(shape: tuple[int, ...] | str) -> dict:
    if isinstance(shape, str):
        return generate.generate(shape)
    name = "analysis-" + "x".join(map(str, shape))
    generate.SHAPES.setdefault(name, shape)  # NOTE(analysis): generate() takes shapes by name
    return generate.generate(name)


def bench_matrix(shape: tuple[int, ...]) -> dict:
    network = _network(shape)
    started = time.perf_counter()
    analysis = Analysis(network)
    built = time.perf_counter()
    matrix = analysis.matrix()
    counts = matrix.counts()
    codes = matrix.codes()
    cells = time.perf_counter()
    frame = None
    try:
        frame = matrix.frame(with_routers=True)
    except ImportError:
        pass
    framed = time.perf_counter()
    return {
        "matrix identities x services": f"{counts['identities']:,} x {counts['services']:,}",
        "matrix pairs with access": counts["any"],
        "matrix pairs usable (shared router)": counts["usable"],
        "matrix analysis build s": built - started,
        "matrix cells (counts + codes) s": cells - built,
        "matrix DataFrame s": (framed - cells) if frame is not None else "pandas not installed",
        "matrix total s": framed - started,
        "matrix cells": int(codes.size),
    }


def _explain_timings(analysis: Analysis, samples: int, seed: int) -> tuple[list[float], int]:
    rng = random.Random(seed)
    ids, svcs = analysis.populations["identities"].names, analysis.populations["services"].names
    timings, allowed = [], 0
    for _ in range(samples):
        identity, service, ptype = rng.choice(ids), rng.choice(svcs), rng.choice(("Dial", "Bind"))
        began = time.perf_counter()
        explanation = analysis.explain(identity, service, ptype)
        timings.append((time.perf_counter() - began) * 1000)
        allowed += explanation.allowed
    return sorted(timings), allowed


def bench_explain(shape: str, samples: int) -> dict:
    """Explain random pairs; then again with AllOf service policies and no ``#all``, so that most are denied."""
    network = _network(shape)
    started = time.perf_counter()
    analysis = Analysis(network)
    built = time.perf_counter() - started
    analysis.explain(analysis.populations["identities"].names[0], analysis.populations["services"].names[0])  # warm
    timings, allowed = _explain_timings(analysis, samples, 11)
    network["servicePolicies"] = [
        {**p, "semantic": "AllOf"}
        for p in network["servicePolicies"]
        if "#all" not in p["identityRoles"] + p["serviceRoles"]
    ]
    narrower = Analysis(network)
    narrower.explain(narrower.populations["identities"].names[0], narrower.populations["services"].names[0])
    denied_timings, denied_allowed = _explain_timings(narrower, samples, 12)
    ids, svcs = analysis.populations["identities"].names, analysis.populations["services"].names
    return {
        f"explain shape ({shape})": f"{len(ids):,} identities x {len(svcs):,} services",
        "explain analysis build s": built,
        "explain p50 ms": statistics.median(timings),
        "explain p95 ms": timings[int(len(timings) * 0.95) - 1],
        "explain samples (allowed)": f"{samples} ({allowed})",
        "explain AllOf, no #all p50 ms": statistics.median(denied_timings),
        "explain AllOf, no #all p95 ms": denied_timings[int(len(denied_timings) * 0.95) - 1],
        "explain AllOf, no #all samples (allowed)": f"{samples} ({denied_allowed})",
    }


def main(quick: bool = False) -> dict:
    figures = bench_matrix(QUICK_MATRIX_SHAPE if quick else MATRIX_SHAPE)
    figures.update(bench_explain("medium" if quick else "large", 50 if quick else 200))
    figures["peak RSS MB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return figures


if __name__ == "__main__":
    for key, value in main(quick="--quick" in sys.argv).items():
        print(f"{key:<44} {value:,.3f}" if isinstance(value, float) else f"{key:<44} {value}")
