"""The fleet simulator under Locust's distributed mode: a master and one worker drive libziti-like SDKs."""

from __future__ import annotations

import csv
import importlib.util
import subprocess
import sys

import pytest

import harness
from harness.server import free_port

# NOTE: never import locust here: it patches the standard library for gevent (the run is subprocesses)
pytestmark = pytest.mark.skipif(importlib.util.find_spec("locust") is None, reason="needs the load extra (locust)")
LOCUSTFILE = harness.__path__[0] + "/locust_fleet.py"


def test_a_locust_master_and_worker_run_sdks_that_log_in_by_oidc_and_poll(ziti_quickstart_controller, tmp_path):
    local = ziti_quickstart_controller
    port = free_port()
    common = [sys.executable, "-m", "locust", "-f", LOCUSTFILE, "--host", local.https_url]
    master = subprocess.Popen(
        [
            *common,
            "--headless",
            "--master",
            "--master-bind-host",
            "127.0.0.1",
            "--master-bind-port",
            str(port),
            "--expect-workers",
            "1",
            "-u",
            "3",
            "-r",
            "3",
            "-t",
            "4s",
            "--stop-timeout",
            "2",
            "--only-summary",
            "--csv",
            str(tmp_path / "run"),
            "--ziti-admin-url",
            local.url,
            "--ziti-poll-every",
            "0.5",
            "--ziti-routers-every",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    worker = subprocess.Popen(
        [
            *common,
            "--worker",
            "--master-host",
            "127.0.0.1",
            "--master-port",
            str(port),
            "--ziti-admin-url",
            local.url,
            "--ziti-poll-every",
            "0.5",
            "--ziti-routers-every",
            "1",
        ],
        stdout=open(tmp_path / "worker.log", "w"),
        stderr=subprocess.STDOUT,
    )
    try:
        output, _ = master.communicate(timeout=90)
    finally:
        for process in (master, worker):
            process.kill()
            process.wait(10)

    assert master.returncode == 0, output[-2000:] + (tmp_path / "worker.log").read_text()[-3000:]
    with open(tmp_path / "run_stats.csv") as stats:
        rows = {row["Name"]: row for row in csv.DictReader(stats)}
    assert int(rows["login (oidc)"]["Request Count"]) == 3
    assert int(rows["/edge/client/v1/current-api-session/service-updates"]["Request Count"]) >= 3
    assert int(rows["/edge/client/v1/current-identity/edge-routers"]["Request Count"]) >= 1
    assert int(rows["Aggregated"]["Failure Count"]) == 0
