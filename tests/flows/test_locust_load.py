"""Virtual SDK clients under Locust's distributed mode: a master and one worker on 127.0.0.1."""

from __future__ import annotations

import csv
import importlib.util
import subprocess
import sys

import pytest

import harness
from harness.client import ZitiClient
from harness.network import apply
from harness.processes.server import free_port
from tests.flows.locust_run import locust_run

# NOTE: never import locust here: it patches the standard library for gevent (the run is subprocesses)
pytestmark = pytest.mark.skipif(importlib.util.find_spec("locust") is None, reason="needs the load extra (locust)")
LOCUSTFILE = harness.__path__[0] + "/dataplane/locustfile.py"


def test_a_headless_locust_master_and_worker_drive_virtual_sdk_clients(
    ziti_app, ziti_http_server, ziti_unique, tmp_path
):
    holder, server = ziti_http_server
    holder.app = ziti_app
    prefix = ziti_unique("vu") + "-"
    with ZitiClient.connect(server.url) as admin:
        admin.login("admin", "admin")
        apply(
            admin,
            {
                "services": [{"name": f"{prefix}svc", "roleAttributes": ["load"]}],
                "identities": [
                    {"name": f"{prefix}{n}", "roleAttributes": ["load"], "password": "pw-load-1"} for n in range(2)
                ],
                "edgeRouters": [{"name": f"{prefix}edge", "roleAttributes": ["load"]}],
                "servicePolicies": [
                    {"name": f"{prefix}dial", "type": "Dial", "identityRoles": ["#load"], "serviceRoles": ["#load"]}
                ],
                "edgeRouterPolicies": [
                    {"name": f"{prefix}erp", "identityRoles": ["#load"], "edgeRouterRoles": ["#load"]}
                ],
                "serviceEdgeRouterPolicies": [
                    {"name": f"{prefix}serp", "serviceRoles": ["#load"], "edgeRouterRoles": ["#load"]}
                ],
            },
        )
    ziti = ["--ziti-username", prefix, "--ziti-users", "2", "--ziti-password", "pw-load-1"]
    rows = locust_run(LOCUSTFILE, server.url, tmp_path, users=2, seconds=3, master=ziti)
    assert int(rows["/authenticate"]["Request Count"]) >= 2
    assert int(rows["/edge/client/v1/services"]["Request Count"]) >= 2
    assert int(rows["Aggregated"]["Failure Count"]) == 0
    assert int(rows["/edge/client/v1/sessions"]["Request Count"]) >= 1  # dials created sessions
    # the statistics count the requests; httpx's own line per request stays out of the worker's log
    assert "HTTP Request:" not in (tmp_path / "worker.log").read_text()


def readme_locust_commands() -> list[list[str]]:
    """The README's two Locust lines (master, worker), continuation lines joined, comments dropped."""
    import re
    import shlex
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = re.search(r"```sh\n(locust .*?)```", readme, flags=re.S).group(1)
    lines = block.replace("\\\n", " ").splitlines()
    return [shlex.split(line, comments=True) for line in lines if line.strip()]


def test_the_readme_distributed_run_works_as_written_with_two_workers(ziti_app, ziti_http_server, tmp_path):
    holder, server = ziti_http_server
    holder.app = ziti_app
    master_line, worker_line = readme_locust_commands()
    assert master_line[0] == worker_line[0] == "locust" and "--master" in master_line and "--worker" in worker_line
    # 6 s: under a loaded CI the master's --ziti-create-users and four logins have taken more than 3
    bounded = {"-u": "4", "-r": "4", "-t": "6s", "--ziti-users": "4", "--host": server.url, "--expect-workers": "2"}
    master_args = [bounded.get(before, arg) for before, arg in zip(["", *master_line], master_line)]
    port = free_port()
    python = [sys.executable, "-m"]
    master = subprocess.Popen(
        [
            *python,
            *master_args,
            "--master-bind-host",
            "127.0.0.1",
            "--master-bind-port",
            str(port),
            "--stop-timeout",
            "2",
            "--only-summary",
            "--csv",
            str(tmp_path / "run"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    workers = [
        subprocess.Popen(
            [*python, *worker_line, "--master-port", str(port)],
            stdout=open(tmp_path / f"worker{n}.log", "w"),
            stderr=subprocess.STDOUT,
        )
        for n in range(2)
    ]
    try:
        output, _ = master.communicate(timeout=90)
    finally:
        for process in (master, *workers):
            process.kill()
            process.wait(10)
    logs = "".join((tmp_path / f"worker{n}.log").read_text()[-1500:] for n in range(2))
    assert master.returncode == 0, output[-2000:] + logs
    with open(tmp_path / "run_stats.csv") as stats:
        rows = {row["Name"]: row for row in csv.DictReader(stats)}
    assert "/authenticate" in rows, output[-2000:] + logs
    assert int(rows["/authenticate"]["Request Count"]) >= 4
    assert int(rows["Aggregated"]["Failure Count"]) == 0
    with ZitiClient.in_process(ziti_app) as admin:  # --ziti-create-users made them before the users started
        admin.login("admin", "admin")
        names = {i["name"] for i in admin.management.iterate("listIdentities", filter='name contains "vu-"')}
    assert names == {f"vu-{n}" for n in range(4)}
