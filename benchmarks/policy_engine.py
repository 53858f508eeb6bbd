"""Policy engine load time, memory and query latency on the real controller's shapes.

Run: ``python -m benchmarks.policy_engine`` (``--quick`` skips the large shape).
Shapes follow the real controller's performance scenarios: eight attributes over
1/2, 1/2, 1/3, 1/4, 1/5, 1/8, 1/10 and 1/10 of each population (assigned with the
same stepping as its generator), two ``#all``/``@id`` policies per policy kind,
then AnyOf permutations of the attributes that also name the first entity by id.
Targets for "large": load well under 60 s, peak RSS well under 1.5 GB. Memory is
measured in a fresh process (the engine alone, and that process's peak).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from controller.policy.engine import PolicyEngine

# (services, identities, edge routers, service policies, edge router policies, service edge router policies)
SHAPES = {
    "small": (20, 100, 10, 10, 10, 10),
    "medium": (100, 5_000, 100, 50, 50, 25),
    "large": (2_000, 100_000, 500, 250, 250, 100),
}
FRACTIONS = (2, 2, 3, 4, 5, 8, 10, 10)
SAMPLES = 1_000


def spread_attributes(count: int, prefix: str) -> list[list[str]]:
    """Per entity attributes, stepping through the population as the real generator does."""
    result: list[list[str]] = [[] for _ in range(count)]
    if count < 2:
        return result
    targets = result[1:]  # the first entity carries no attribute
    remaining = [count // n for n in FRACTIONS]
    names = iter(f"{prefix}-attr{i}" for i in range(len(FRACTIONS)))
    attr, offset, index = next(names), 2, 0
    while remaining:
        targets[index].append(attr)
        remaining[0] -= 1
        while remaining and remaining[0] <= 0:
            remaining.pop(0)
            if remaining and remaining[0] > 0:
                offset += len(remaining) < 4
                attr = next(names)
        index = (index + offset) % len(targets)
    return [sorted(set(attrs)) for attrs in result]


def random_attributes(count: int, prefix: str, seed: int = 3) -> list[list[str]]:
    """Stress variant: each attribute drawn independently, giving up to 256 attribute classes."""
    rng = random.Random(seed)
    return [[f"{prefix}-attr{k}" for k, n in enumerate(FRACTIONS) if rng.random() < 1 / n] for _ in range(count)]


SPREADS = {"real": spread_attributes, "random": random_attributes}


def permutations(values: list[str], limit: int) -> list[list[str]]:
    """The first ``limit`` ordered subsets, depth first: [a], [a, b], [a, b, c], ..."""
    result: list[list[str]] = []

    def walk(base: list[str], rest: list[str]) -> bool:
        for i, value in enumerate(rest):
            result.append(base + [value])
            if len(result) >= limit or not walk(base + [value], rest[i + 1 :]):
                return False
        return True

    walk([], values)
    return result


def build_shape(shape: str, spread: str = "real") -> dict:
    """Entities (id -> attributes) and policy argument tuples of a shape."""
    n_svc, n_id, n_er, n_sp, n_erp, n_serp = SHAPES[shape]
    net = {
        kind: {f"{kind[:2]}{i:06d}": attrs for i, attrs in enumerate(SPREADS[spread](n, kind))}
        for kind, n in (("services", n_svc), ("identities", n_id), ("routers", n_er))
    }
    first = {kind: next(iter(ids)) for kind, ids in net.items()}
    attrs = {kind: sorted({a for values in ids.values() for a in values}) for kind, ids in net.items()}

    def policies(count: int, a_kind: str, b_kind: str) -> list[tuple[list[str], list[str]]]:
        result = [(["@" + first[a_kind]], ["#all"]), (["#all"], ["@" + first[b_kind]])]
        a_perms, b_perms = permutations(attrs[a_kind], count), permutations(attrs[b_kind], count)
        for i in range(2, count):
            a_roles = ["#" + x for x in a_perms[i % len(a_perms)]] + ["@" + first[a_kind]]
            b_roles = ["#" + x for x in b_perms[i % len(b_perms)]] + ["@" + first[b_kind]]
            result.append((a_roles, b_roles))
        return result[:count]

    net["sp"] = policies(n_sp, "identities", "services")
    net["erp"] = policies(n_erp, "identities", "routers")
    net["serp"] = policies(n_serp, "services", "routers")
    return net


def load(engine: PolicyEngine, net: dict) -> None:
    """Replay a network as the controller does on start: entities, then policies."""
    for entity_id, attrs in net["services"].items():
        engine.upsert_service(entity_id, attrs)
    for entity_id, attrs in net["identities"].items():
        engine.upsert_identity(entity_id, attrs)
    for entity_id, attrs in net["routers"].items():
        engine.upsert_edge_router(entity_id, attrs)
    for i, (ids, svcs) in enumerate(net["sp"]):
        engine.upsert_service_policy(f"sp{i:04d}", "Dial", "AnyOf", ids, svcs, [])
    for i, (ids, ers) in enumerate(net["erp"]):
        engine.upsert_edge_router_policy(f"erp{i:04d}", "AnyOf", ids, ers)
    for i, (svcs, ers) in enumerate(net["serp"]):
        engine.upsert_service_edge_router_policy(f"serp{i:04d}", "AnyOf", svcs, ers)


def p50_us(call: Callable[[], object], count: int = SAMPLES) -> tuple[float, float]:
    """Median and 99th percentile of ``call`` in microseconds."""
    timings = []
    for _ in range(count):
        started = time.perf_counter()
        call()
        timings.append((time.perf_counter() - started) * 1e6)
    timings.sort()
    return statistics.median(timings), timings[int(len(timings) * 0.99) - 1]


def timed_ms(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def rss_mb() -> float:
    """This process's resident memory now (Linux), in MB."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb() -> float:
    """This process image's peak resident memory (VmHWM: unlike ru_maxrss, not inherited over exec)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # pragma: no cover - not Linux


def engine_memory(shape: str, spread: str) -> dict:
    """Build the shape, then load the engine, in a fresh process: RSS the engine adds, and the peak."""
    gc.collect()
    net = build_shape(shape, spread)
    gc.collect()
    before = rss_mb()
    engine = PolicyEngine()
    load(engine, net)
    gc.collect()
    return {
        "engine_mb": rss_mb() - before,
        "peak_mb": peak_mb(),
        "size": len(engine.services_for_identity(next(iter(net["identities"])))),
    }


def engine_memory_in_fresh_process(shape: str, spread: str) -> dict:
    """``engine_memory`` in a child process, so earlier sections' memory does not count."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.policy_engine", "--memory-of", shape, "--spread", spread],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=600,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])},
    )
    return json.loads(done.stdout)


def measure(shape: str, spread: str = "real") -> dict[str, float]:
    """Load one shape into a fresh engine and time its queries and writes."""
    net, net_shape = build_shape(shape, spread), shape
    if spread != "real":
        shape = f"{shape}/{spread}"
    engine = PolicyEngine()
    started = time.perf_counter()
    load(engine, net)
    loaded = time.perf_counter() - started
    memory = engine_memory_in_fresh_process(net_shape, spread)
    started = time.perf_counter()
    with PolicyEngine().bulk() as bulk:
        load(bulk, net)
    bulk_loaded = time.perf_counter() - started
    figures = {
        f"{shape}: load (s)": loaded,
        f"{shape}: bulk load, as on start (s)": bulk_loaded,
        f"{shape}: bulk / incremental load ratio": bulk_loaded / loaded,
        f"{shape}: engine memory, fresh process (MB)": memory["engine_mb"],
        f"{shape}: fresh process peak RSS (MB)": memory["peak_mb"],
    }
    figures.update(query_figures(shape, engine, net))
    figures.update(change_figures(shape, engine, net))
    return figures


def query_figures(shape: str, engine: PolicyEngine, net: dict) -> dict[str, float]:
    rng = random.Random(7)
    identities, services = list(net["identities"]), list(net["services"])

    def pick_id() -> str:
        return identities[rng.randrange(len(identities))]

    def pick_svc() -> str:
        return services[rng.randrange(len(services))]

    figures = {}
    median, p99 = p50_us(lambda: engine.services_for_identity(pick_id()))
    figures[f"{shape}: services_for_identity p50 (us)"] = median
    figures[f"{shape}: services_for_identity p99 (us)"] = p99
    figures[f"{shape}: services_for_identity answer size (first identity)"] = len(
        engine.services_for_identity(identities[0])
    )
    median, p99 = p50_us(lambda: engine.usable_edge_routers(pick_id(), pick_svc()))
    figures[f"{shape}: usable_edge_routers p50 (us)"] = median
    figures[f"{shape}: usable_edge_routers p99 (us)"] = p99
    median, p99 = p50_us(lambda: engine.permissions(pick_id(), pick_svc()))
    figures[f"{shape}: permissions p50 (us)"] = median
    figures[f"{shape}: permissions p99 (us)"] = p99
    names = iter(range(SAMPLES))
    median, _ = p50_us(lambda: engine.upsert_identity(f"bench-{next(names)}", net["identities"][pick_id()]))
    figures[f"{shape}: new identity into the loaded network p50 (us)"] = median
    return figures


def change_figures(shape: str, engine: PolicyEngine, net: dict) -> dict[str, float]:
    """Cost of single writes, with a listener attached as the API does."""
    affected: list[int] = []
    engine.add_listener(lambda ids: affected.append(len(ids)))
    # sp0002 names identities by the first attribute; move it to the second one.
    ids, svcs = net["sp"][2]
    first_attr, second_attr = sorted({a for attrs in net["identities"].values() for a in attrs})[:2]
    moved = ["#" + second_attr if role == "#" + first_attr else role for role in ids]
    figures = {
        f"{shape}: SP identity roles change (ms)": timed_ms(
            lambda: engine.upsert_service_policy("sp0002", "Dial", "AnyOf", moved, svcs, [])
        ),
        f"{shape}: identities told of that change": affected[-1] if affected else 0,
        f"{shape}: new #all/#all SP (ms)": timed_ms(
            lambda: engine.upsert_service_policy("bench-all", "Bind", "AnyOf", ["#all"], ["#all"], [])
        ),
        f"{shape}: remove that SP (ms)": timed_ms(lambda: engine.remove_service_policy("bench-all")),
        f"{shape}: identity attribute change (ms)": timed_ms(
            lambda: engine.upsert_identity(next(iter(net["identities"])), ["bench-new-attr"])
        ),
        f"{shape}: new edge router under #all policies (ms)": timed_ms(
            lambda: engine.upsert_edge_router("bench-router", [])
        ),
    }
    return figures


def main(quick: bool = False, shapes: list[str] | None = None, spread: str = "real") -> dict[str, float]:
    """Measure the shapes (``small`` and ``large`` by default) and return the figures."""
    figures: dict[str, float] = {}
    for shape in shapes or (["small", "medium"] if quick else ["small", "large"]):
        figures.update(measure(shape, spread))
    return figures


def _cli(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.policy_engine")
    parser.add_argument("--quick", action="store_true", help="small and medium shapes only")
    parser.add_argument("--shape", choices=sorted(SHAPES), action="append")
    parser.add_argument(
        "--spread",
        choices=sorted(SPREADS),
        default="real",
        help="attribute assignment: the real generator's stepping, or independent draws",
    )
    parser.add_argument("--memory-of", choices=sorted(SHAPES), help="print the engine memory of one shape as JSON")
    args = parser.parse_args(argv)
    if args.memory_of:
        print(json.dumps(engine_memory(args.memory_of, args.spread)))
        return 0
    for key, value in main(args.quick, args.shape, args.spread).items():
        shown = f"{value:,.3f}" if isinstance(value, float) else f"{value}"
        print(f"{key:<58} {shown}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_cli())
