"""The fleet simulator under Locust's distributed mode: a master and one worker drive libziti-like SDKs."""

from __future__ import annotations

import importlib.util

import pytest

import harness
from tests.flows.locust_run import locust_run

# NOTE: never import locust here: it patches the standard library for gevent (the run is subprocesses)
pytestmark = pytest.mark.skipif(importlib.util.find_spec("locust") is None, reason="needs the load extra (locust)")
LOCUSTFILE = harness.__path__[0] + "/dataplane/locust_fleet.py"


def test_a_locust_master_and_worker_run_sdks_that_log_in_by_oidc_and_poll(ziti_quickstart_controller, tmp_path):
    local = ziti_quickstart_controller
    ziti = ["--ziti-admin-url", local.url, "--ziti-poll-every", "0.5", "--ziti-routers-every", "1"]
    # 6 s: on a loaded CI machine the first login took 3 s and more, leaving no time for a routers poll in 4 s
    rows = locust_run(LOCUSTFILE, local.https_url, tmp_path, users=3, seconds=6, worker=ziti)
    assert int(rows["login (oidc)"]["Request Count"]) == 3
    assert int(rows["/edge/client/v1/current-api-session/service-updates"]["Request Count"]) >= 3
    assert int(rows["/edge/client/v1/current-identity/edge-routers"]["Request Count"]) >= 1
    assert int(rows["Aggregated"]["Failure Count"]) == 0
    assert "HTTP Request:" not in (tmp_path / "worker.log").read_text()  # the admin's httpx requests, not logged
