"""``ziti fabric list ...`` and ``ziti ops verify traffic`` as subprocesses against a quickstart (controller and router).

Tables, columns and cells are the real command's (``ziti/cmd/fabric/list.go``); ``verify traffic`` follows
``ziti/cmd/ops/verify/ops_verify_traffic.go``: its names, its steps, its log lines and its cleanup.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import pytest

from tests.ziti.conftest import ROOT, Ziti, env_for

FABRIC_HEADERS = {
    "routers": ["ID", "NAME", "ONLINE", "COST", "NO TRAVERSAL", "DISABLED", "VERSION", "LISTENERS"],
    "links": ["ID", "DIALER", "ACCEPTOR", "STATIC COST", "SRC LATENCY", "DST LATENCY", "STATE", "STATUS", "FULL COST",
              "CONNECTIONS"],
    "circuits": ["ID", "CLIENT", "SERVICE", "TERMINATOR", "CREATEDAT", "PATH"],
    "terminators": ["ID", "SERVICE", "ROUTER", "BINDING", "ADDRESS", "INSTANCE", "COST", "PRECEDENCE", "DYNAMIC COST",
                    "HOST ID"],
    "services": ["ID", "NAME", "TERMINATOR STRATEGY"],
}  # fmt: skip
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def header_cells(table: str) -> list[str]:
    return [cell.strip() for cell in table.splitlines()[1].strip("│").split("│")]


def row_cells(table: str) -> list[list[str]]:
    lines = table.splitlines()
    return [[c.strip() for c in line.strip("│").split("│")] for line in lines[3:] if line.startswith("│")]


def log_lines(stderr: str) -> list[str]:
    """The messages of the logrus lines (colour and level stripped)."""
    return [ANSI.sub("", line)[8:].strip() for line in stderr.splitlines() if line.startswith("\x1b[")]


def entities(ziti: Ziti, kind: str, prefix: str) -> list[dict]:
    return json.loads(ziti.edge("list", kind, f'name contains "{prefix}."', "-j"))["data"]


@pytest.mark.parametrize("kind", sorted(FABRIC_HEADERS))
def test_fabric_list_prints_the_real_columns_and_a_paging_line(ziti, quickstart, kind):
    out = ziti.ok("fabric", "list", kind)
    assert header_cells(out) == FABRIC_HEADERS[kind]
    assert re.search(r"^results: (none|1-\d+ of \d+)$", out.splitlines()[-1])


def test_fabric_list_routers_shows_the_online_router_with_its_version_and_listener(ziti, quickstart):
    out = ziti.ok("fabric", "ls", "routers", 'name = "quickstart-router"')
    [row] = row_cells(out)
    assert row[1:6] == ["quickstart-router", "true", "0", "false", "false"]
    assert re.fullmatch(r"\S+ on \w+/\S+", row[6]) and re.fullmatch(r"1: tls:127\.0\.0\.1:\d+", row[7])
    assert out.splitlines()[-1] == "results: 1-1 of 1"


def test_fabric_list_filters_json_and_csv(ziti, quickstart):
    none = ziti.ok("fabric", "list", "routers", 'name = "no-such-router"')
    assert row_cells(none) == [] and none.splitlines()[-1] == "results: none"
    payload = json.loads(ziti.ok("fabric", "list", "routers", "--output-json"))
    assert [r["name"] for r in payload["data"]] == ["quickstart-router"] and payload["meta"]["pagination"]
    csv = ziti.ok("fabric", "list", "services", "--csv").splitlines()
    assert csv[0] == "ID,Name,Terminator Strategy" and not any(line.startswith("results") for line in csv)


def test_fabric_list_mistakes_are_one_line_with_the_exit_code(ziti, quickstart):
    extra = ziti("fabric", "list", "routers", "a", "b")
    assert extra.returncode == 2 and "unrecognized arguments: b" in extra.stderr
    unknown = ziti("fabric", "list", "widgets")
    assert unknown.returncode == 2 and "invalid choice: 'widgets'" in unknown.stderr
    bad = ziti("fabric", "list", "routers", "name = ")
    assert bad.returncode == 1 and bad.stderr.startswith("error: the controller answered 400")


def test_fabric_list_without_a_login_says_to_log_in(tmp_path):
    done = Ziti(tmp_path)("fabric", "list", "routers")
    assert done.returncode == 3 and "log in first" in done.stderr


def test_verify_traffic_binds_dials_answers_and_cleans_up(ziti, quickstart):
    done = ziti("ops", "verify", "traffic", "--prefix", "vt1", timeout=120)
    assert done.returncode == 0, done.stderr
    lines = log_lines(done.stderr)
    expected = [
        "successfully bound service: vt1.traffic.",
        "Server is listening for a connection and will exit when one is received.",
        "waiting 10s for terminator for service: vt1.traffic",
        "found terminator for service: vt1.traffic",
        "found service named: vt1.traffic",
        "successfully dialed service: vt1.traffic.",
        "traffic test successfully detected",
        "Server complete. exiting",
        "client complete",
    ]
    assert [line for line in lines if line in expected] == expected, lines
    assert done.stdout == "\n"  # the blank line the real server prints for humans
    for kind in ("identities", "services", "service-policies"):
        assert entities(ziti, kind, "vt1") == [], kind


def test_verify_traffic_logs_in_from_its_flags_without_saving(quickstart, tmp_path):
    fresh = Ziti(tmp_path)
    url = f"127.0.0.1:{quickstart.ctrl_port}"
    done = fresh(
        "ops",
        "verify",
        "traffic",
        "-u",
        "admin",
        "-p",
        "admin",
        "--controller-url",
        url,
        "-y",
        "--verbose",
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = log_lines(done.stderr)
    assert "client complete" in lines
    # --verbose adds logrus's debug lines: what was sent and what came back
    assert {"sent : traffic test", "read : traffic test", "Received: you sent me: traffic test"} <= set(lines)
    assert fresh("fabric", "list", "routers").returncode == 3  # nothing saved


def test_a_leftover_from_an_earlier_run_fails_until_cleanup(ziti, quickstart):
    ziti.edge("create", "service", "vt2.traffic")
    leftover = ziti("ops", "verify", "traffic", "-x", "vt2", timeout=60)
    assert leftover.returncode == 1
    assert leftover.stderr.strip().splitlines()[-1].startswith("error: failed to create service vt2.traffic")
    cleaned = ziti("ops", "verify", "traffic", "-x", "vt2", "--cleanup", timeout=120)
    assert cleaned.returncode == 0, cleaned.stderr
    lines = log_lines(cleaned.stderr)
    assert (
        lines[0].startswith("attempting to cleanup based on parameters") and lines[1] == "cleanup complete. continuing"
    )
    assert entities(ziti, "services", "vt2") == []


def test_server_and_client_modes_meet_by_prefix(ziti, quickstart):
    server = subprocess.Popen(
        [sys.executable, "-m", "harness.ziti", "ops", "verify", "traffic", "-m", "server", "-x", "vt3"],
        cwd=ROOT,
        env=env_for(ziti.home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not row_cells(ziti.ok("fabric", "list", "terminators", 'service.name = "vt3.traffic"')):
            assert server.poll() is None and time.monotonic() < deadline, server.stderr.read()
            time.sleep(0.2)
        [row] = row_cells(ziti.ok("fabric", "list", "terminators", 'service.name = "vt3.traffic"'))
        assert row[1:4] == ["vt3.traffic", "quickstart-router", "edge"]
        client = ziti("ops", "verify", "traffic", "-m", "client", "-x", "vt3", timeout=120)
        assert client.returncode == 0, client.stderr
        assert server.wait(60) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(10)
    assert "traffic test successfully detected" in log_lines(server.stderr.read())
    assert entities(ziti, "identities", "vt3") == [] and entities(ziti, "services", "vt3") == []


def test_verify_traffic_refusals(ziti, quickstart):
    unknown = ziti("ops", "verify", "traffic", "-m", "sideways", "-x", "vt4")
    assert (
        unknown.returncode == 1
        and unknown.stderr.strip() == "error: unknown mode: sideways (use server, client or both)"
    )
    signer = ziti("ops", "verify", "traffic", "--ext-jwt-signer", "idp")
    assert signer.returncode == 1 and "--controller-url is required when using --ext-jwt-signer" in signer.stderr
    alone = ziti("ops", "verify", "traffic", "-m", "client", "-x", "vt5")
    assert alone.returncode == 1 and "terminator not found for service: vt5.traffic" in alone.stderr
    assert entities(ziti, "identities", "vt5") == []
