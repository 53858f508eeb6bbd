"""A large store folder, and the start of a fresh controller on it (run as subprocesses).

``python -m benchmarks.bulk_start fill FOLDER IDENTITIES SERVICES`` writes a
network of that size (the ``benchmarks.network`` load, plus its probe
identity that sees 10 services) durably into ``FOLDER/db``.
``python -m benchmarks.bulk_start measure FOLDER`` starts a controller on it
in this fresh process and prints JSON: start seconds, RSS after start (MB) and
the probe's client ``GET /services`` p50 (ms).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from benchmarks.network import CLIENT, SHAPES, Bench, rss_mb


def fill(folder: str, identities: int, services: int) -> dict:
    from controller.store.db import Store

    shape = {**SHAPES["large"], "identities": identities, "services": services}
    started = time.perf_counter()
    bench = Bench(shape, store=Store(Path(folder) / "db"))
    bench.close()  # waits for the background snapshot
    return {"fill_seconds": time.perf_counter() - started}


def measure(folder: str, repeats: int = 200) -> dict:
    import falcon.testing

    from controller.app import create_app
    from controller.config import Config

    started = time.perf_counter()
    app = create_app(Config(data_dir=Path(folder)))
    start_seconds = time.perf_counter() - started
    rss, _peak = rss_mb()
    client = falcon.testing.TestClient(app)
    login = client.simulate_post(
        CLIENT + "/authenticate",
        params={"method": "password"},
        json={"username": "probe-user", "password": "probe-pass"},
    )
    headers = {"zt-session": login.json["data"]["token"]}
    samples = []
    for _ in range(repeats):
        began = time.perf_counter()
        reply = client.simulate_get(CLIENT + "/services", headers=headers, params={"configTypes": "all", "limit": "25"})
        samples.append(time.perf_counter() - began)
        if reply.status_code != 200 or len(reply.json["data"]) != 10:
            raise RuntimeError(f"GET /services: {reply.status_code} {reply.text[:200]}")
    samples.sort()
    app.controller.close()
    return {"start_seconds": start_seconds, "rss_mb": rss, "services_p50_ms": samples[len(samples) // 2] * 1000}


if __name__ == "__main__":
    command, folder, *rest = sys.argv[1:]
    result = fill(folder, *map(int, rest)) if command == "fill" else measure(folder)
    print(json.dumps(result))
