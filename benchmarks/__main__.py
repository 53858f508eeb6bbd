"""``python -m benchmarks``: print every speed and memory figure of the project.

Figures are printed, never asserted: shared machines make timings noisy.
``--quick`` uses smaller shapes; ``--only NAME`` runs one section.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time

SECTIONS = {
    "api": "benchmarks.api",
    "storage": "benchmarks.storage",
    "policy": "benchmarks.policy_engine",
    "serving": "benchmarks.serving",
    "network": "benchmarks.network",
    "analysis": "benchmarks.analysis",
    "router": "benchmarks.router",
    "bulk": "benchmarks.bulk",
    "oidc": "benchmarks.oidc",
    "readiness": "benchmarks.readiness",
    "failover": "benchmarks.failover",
    "fleet": "benchmarks.fleet",
    "cluster": "benchmarks.cluster",
}


def run_section(name: str, quick: bool) -> None:
    try:
        module = importlib.import_module(SECTIONS[name])
    except ModuleNotFoundError as ex:
        print(f"[{name}] skipped: {ex}")
        return
    started = time.perf_counter()
    print(f"[{name}]", flush=True)
    try:
        figures = module.main(quick=quick)
    except TypeError:
        figures = module.main()
    for key, value in (figures or {}).items():
        shown = f"{value:,.3f}" if isinstance(value, float) else f"{value}"
        print(f"  {key:<48} {shown}")
    print(f"  ({time.perf_counter() - started:.1f} s)", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("--quick", action="store_true", help="smaller shapes, shorter runs")
    parser.add_argument("--only", choices=sorted(SECTIONS), action="append")
    args = parser.parse_args(argv)
    for name in args.only or SECTIONS:
        run_section(name, args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
