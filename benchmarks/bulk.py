"""Bulk figures of issue 15: durable writes, whole networks, filtered lists, big starts.

Every figure sits beside an anchor measured in the same run:

* the real "large" shape (103,100 entities) from its YAML file to a ready network:
  in-process, and over HTTP by ``ziti-harness apply`` in its own process;
  anchor: the YAML parse alone;
* a filtered page at 100,000 identities for the common filters; anchor: a filter
  no index answers (a scan);
* controller start, RSS and the probe's client ``GET /services`` p50 on the large
  shape and on 1,000,000 identities, each in a fresh process; the large shape's
  figures are the anchor of the big one's.

The 1-minute load average is printed beside the ratios: the machine is shared.

Durable creates per second are the ``serving`` section's (one driver, one anchor).
Targets: large shape <= 60 s; filtered page
<= 5 ms; 1M identities start <= 60 s with RSS <= 2 GB.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from benchmarks.network import SHAPES, load

QUICK = {"network": "medium", "identities": 10_000, "big": 100_000}
FULL = {"network": "large", "identities": 100_000, "big": 1_000_000}
FILTERS = {
    "name =": 'name = "name-id050000"',
    "name contains": 'name contains "id05000"',
    "id in [3]": 'id in ["id000001", "id050000", "id099999"]',
    "anyOf(roleAttributes) = and name contains": 'anyOf(roleAttributes) = "role7" and name contains "id0500"',
    "tags.team =": 'tags.team = "blue"',
}
SCAN = 'name icontains "ID05000"'  # no index answers icontains: the anchor


def _server(folder: Path):
    from controller.app import create_app
    from controller.config import Config
    from controller.server.serve import ThreadedServer
    from harness.client import ZitiClient

    app = create_app(Config(data_dir=folder))
    server = ThreadedServer(app).start()
    client = ZitiClient.connect(server.url)
    client.login("admin", "admin")
    return app, server, client


def _run(command: list[str], timeout: float = 3600) -> str:
    """Run a helper process; its stdout, or RuntimeError with the end of its stderr."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if done.returncode:
        raise RuntimeError(f"{' '.join(command[1:4])}... exited {done.returncode}: {done.stderr[-500:]}")
    return done.stdout


def whole_network(figures: dict, shape: str) -> None:
    from harness.network.generate import generate

    work = Path(tempfile.mkdtemp(prefix="bench-network-"))
    path = work / f"{shape}.yaml"
    path.write_text(yaml.safe_dump(generate(shape), sort_keys=False))
    try:
        started = time.perf_counter()
        from harness.network import Network

        Network.from_yaml(path)
        parse = figures[f"{shape} shape: YAML parse and check alone (s)"] = time.perf_counter() - started
        inprocess = _apply_in_process(path, work / "a")
        figures[f"{shape} shape: file to ready network, in-process (s)"] = inprocess
        figures[f"  in-process / parse ratio ({_load()})"] = inprocess / parse
        http = _apply_over_http(path, work / "b")
        figures[f"{shape} shape: file to ready network, over HTTP (s)"] = http
        figures[f"  over HTTP / in-process ratio ({_load()})"] = http / inprocess
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _apply_in_process(path: Path, folder: Path) -> float:
    from controller.app import create_app
    from controller.config import Config
    from harness.client import ZitiClient
    from harness.network import apply

    app = create_app(Config(data_dir=folder))
    try:
        with ZitiClient.in_process(app) as client:
            client.login("admin", "admin")
            started = time.perf_counter()
            apply(client, path)
            return time.perf_counter() - started
    finally:
        app.controller.close()


def _apply_over_http(path: Path, folder: Path) -> float:
    app, server, client = _server(folder)
    try:
        started = time.perf_counter()
        _run([sys.executable, "-m", "harness.cli", "apply", str(path), "--url", server.url, "--quiet"])
        return time.perf_counter() - started
    finally:
        client.close()
        server.stop()
        app.controller.close()


def filtered_lists(figures: dict, identities: int, repeats: int = 50) -> None:
    import falcon.testing

    from controller.app import create_app
    from controller.clock import Clock, rfc3339
    from controller.config import Config
    from controller.store.db import Store

    store, clock = Store(None), Clock()
    load(
        store,
        {**SHAPES["large"], "identities": identities, "services": 10, "routers": 10, "sps": 1, "erps": 1, "serps": 1},
        rfc3339(clock.now()),
    )
    app = create_app(Config(), clock=clock, store=store)
    client = falcon.testing.TestClient(app)
    token = client.simulate_post(
        "/edge/management/v1/authenticate",
        params={"method": "password"},
        json={"username": "admin", "password": "admin"},
    ).json["data"]["token"]

    def page_ms(text: str) -> float:
        def once():
            started = time.perf_counter()
            reply = client.simulate_get(
                "/edge/management/v1/identities", headers={"zt-session": token}, params={"filter": text, "limit": "10"}
            )
            if reply.status_code != 200:
                raise RuntimeError(f"{text}: {reply.status_code} {reply.text[:200]}")
            return time.perf_counter() - started

        once()  # builds the index on first use
        return statistics.median(once() for _ in range(repeats)) * 1000

    scan = page_ms(SCAN)
    label = f"{identities // 1000}k"
    for name, text in FILTERS.items():
        figures[f"filtered page at {label}, {name} (ms)"] = page_ms(text)
    figures[f"  anchor: scan ({SCAN}) (ms)"] = scan
    app.controller.close()


def _load() -> str:
    """The 1-minute load average, printed beside figures: this machine is shared."""
    return f"load {os.getloadavg()[0]:.1f}"


def big_starts(figures: dict, big: int) -> None:
    anchor = None
    for label, identities, services in (("large shape", 100_000, 2_000), (f"{big:,} identities", big, 2_000)):
        folder = Path(tempfile.mkdtemp(prefix="bench-start-"))
        try:
            run = lambda *args: json.loads(_run([sys.executable, "-m", "benchmarks.bulk_start", *args]))  # noqa: E731
            filled = run("fill", str(folder), str(identities), str(services))
            measured = run("measure", str(folder))
            figures[f"{label}: store fill, durable (s)"] = filled["fill_seconds"]
            figures[f"{label}: controller start, fresh process (s)"] = measured["start_seconds"]
            figures[f"{label}: RSS after start (MB)"] = measured["rss_mb"]
            figures[f"{label}: client GET /services p50 (ms)"] = measured["services_p50_ms"]
            if anchor is None:  # the large shape is the anchor of the big one
                anchor = measured
            else:
                figures[f"  start / large shape's ({_load()})"] = measured["start_seconds"] / anchor["start_seconds"]
                figures["  RSS / large shape's"] = measured["rss_mb"] / anchor["rss_mb"]
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def main(quick: bool = False, only: tuple[str, ...] = ()) -> dict:
    sizes = QUICK if quick else FULL
    figures: dict = {}
    steps = {
        "network": lambda: whole_network(figures, sizes["network"]),
        "filters": lambda: filtered_lists(figures, sizes["identities"]),
        "starts": lambda: big_starts(figures, sizes["big"]),
    }
    for name, step in steps.items():
        if not only or name in only:
            try:
                step()
            except (RuntimeError, OSError, subprocess.SubprocessError) as ex:  # the other sections still run
                figures[f"{name}: FAILED"] = f"{type(ex).__name__}: {str(ex)[-300:]}"
    return figures


if __name__ == "__main__":
    for key, value in main(
        quick="--quick" in sys.argv, only=tuple(a for a in sys.argv[1:] if not a.startswith("-"))
    ).items():
        print(f"{key:<60} {value:,.3f}" if isinstance(value, float) else f"{key:<60} {value}")
