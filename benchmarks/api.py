"""API-level figures of the foundation issue.

* durable create of an identity at 1,000 and 50,000 stored entities, and the ratio;
* a filtered list over 50,000 identities;
* in-process ``GET /current-identity`` per second.

Over-the-socket figures are in ``benchmarks.serving`` (load from another process).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import falcon
import falcon.testing

from controller.app import create_app
from controller.clock import rfc3339
from controller.config import Config
from controller.model.identity import identity_record

ADMIN = {"username": "admin", "password": "admin"}


def _preload(app, count: int) -> None:
    """Fill the identities table with ``count`` identity-shaped records in large transactions."""
    ctl = app.controller
    now = rfc3339(ctl.clock.now())
    batch = 5000
    for start in range(0, count, batch):
        with ctl.store.lock, ctl.store.transaction():
            for index in range(start, min(count, start + batch)):
                record_id = f"pre{index:07d}"
                ctl.store.insert(
                    "identities",
                    record_id,
                    identity_record(
                        record_id,
                        now,
                        name=f"preloaded-{index:07d}",
                        tags={"batch": str(index % 10)},
                        role_attributes=[f"attr{index % 8}"],
                    ),
                )


def _session(app) -> tuple[falcon.testing.TestClient, dict]:
    client = falcon.testing.TestClient(app)
    token = client.simulate_post("/edge/management/v1/authenticate", params={"method": "password"}, json=ADMIN).json[
        "data"
    ]["token"]
    return client, {"zt-session": token}


def durable_create_cost(existing: int, writes: int = 200) -> float:
    """Mean seconds per ``POST /identities`` (fsynced) with ``existing`` identities stored."""
    with tempfile.TemporaryDirectory() as folder:
        app = create_app(Config(data_dir=Path(folder)))
        try:
            _preload(app, existing)
            client, headers = _session(app)
            samples = []
            for index in range(writes):
                body = {
                    "name": f"bench-{existing}-{index}",
                    "type": "Device",
                    "isAdmin": False,
                    "roleAttributes": ["bench"],
                }
                started = time.perf_counter()
                response = client.simulate_post("/edge/management/v1/identities", json=body, headers=headers)
                samples.append(time.perf_counter() - started)
                assert response.status == "201 Created", response.text
            return statistics.median(samples)
        finally:
            app.controller.close()


def filtered_list_cost(existing: int = 50_000, repeats: int = 20) -> float:
    app = create_app(Config())
    _preload(app, existing)
    client, headers = _session(app)
    params = {"filter": 'anyOf(roleAttributes) = "attr3" and name contains "99" sort by name limit 25'}
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        response = client.simulate_get("/edge/management/v1/identities", params=params, headers=headers)
        samples.append(time.perf_counter() - started)
        assert response.status == "200 OK"
    return statistics.median(samples)


def inprocess_rate(seconds: float = 2.0) -> float:
    """Requests per second of the WSGI app called directly (no test-client overhead)."""
    app = create_app(Config())
    _, headers = _session(app)
    environ = falcon.testing.create_environ("/edge/management/v1/current-identity", headers=headers)

    def start_response(status, response_headers, exc_info=None):
        assert status.startswith("200"), status

    count, deadline = 0, time.perf_counter() + seconds
    started = time.perf_counter()
    while time.perf_counter() < deadline:
        b"".join(app(dict(environ), start_response))
        count += 1
    return count / (time.perf_counter() - started)


def main(quick: bool = False) -> dict:
    small, large = (1_000, 20_000) if quick else (1_000, 50_000)
    figures = {}
    cost_small = durable_create_cost(small)
    cost_large = durable_create_cost(large)
    figures["durable create p50 @1k (ms)"] = cost_small * 1000
    figures[f"durable create p50 @{large // 1000}k (ms)"] = cost_large * 1000
    figures["durable create ratio large/small"] = cost_large / cost_small
    figures[f"filtered list @{large // 1000}k p50 (ms)"] = filtered_list_cost(large) * 1000
    figures["in-process GET /current-identity (req/s)"] = inprocess_rate(1.0 if quick else 2.0)
    return figures
