"""``controllers: N`` in a network file: ``ziti-harness up`` runs N controller processes as one cluster, applies the
file through the first, prints every member, keeps the members' ports in its data folder and stops them all."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from harness.client import ZitiClient
from harness.network import Network, NetworkError

ROOT = Path(__file__).resolve().parents[2]
#: bounded waits for real processes (three members and a router start in a few seconds here)
DEADLINE = 60.0
NETWORK = """\
controllers: 3
identities:
  - {name: alice, roleAttributes: [staff]}
services:
  - {name: web}
edgeRouters:
  - {name: er-1, process: true}
"""


def harness_up(network: Path, data: Path) -> tuple[subprocess.Popen, list[str], Path]:
    """``ziti-harness up`` as a subprocess, returned after its banner and router lines (or its exit)."""
    errors = data.parent / "up.stderr"
    with errors.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness.cli", "up", str(network), "--data", str(data), "--port", "0"]
            + ["--no-router", "--router-wait", "30"],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    routers = len(Network.from_yaml(network).process_routers())
    read: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [read.put(line) for line in proc.stdout] + [read.put(None)], daemon=True).start()
    lines: list[str] = []
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:  # bounded: the banner, then one line per process router, or the exit
        try:
            line = read.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        if line is None:
            break
        lines.append(line.rstrip())
        if any("Ctrl-C stops it." in x for x in lines) and sum(x.startswith("router ") for x in lines) == routers:
            break
    return proc, lines, errors


def members(lines: list[str]) -> dict[str, tuple[str, str]]:
    """``{instance id: (role, https url)}`` from the banner."""
    found = (re.match(r"  (ctrl\d) \((leader|follower)\): (https://\S+?)/edge/management/v1", x) for x in lines)
    return {m[1]: (m[2], m[3]) for m in found if m}


def stop(proc: subprocess.Popen, errors: Path) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(DEADLINE) == 0, errors.read_text()


def test_up_with_three_controllers_runs_a_cluster_that_has_the_network_on_every_member_and_stops_it(tmp_path):
    network, data = tmp_path / "net.yaml", tmp_path / "data"
    network.write_text(NETWORK)
    proc, lines, errors = harness_up(network, data)
    try:
        found = members(lines)
        assert sorted(found) == ["ctrl1", "ctrl2", "ctrl3"], (lines, errors.read_text())
        assert [role for role, _ in found.values()].count("leader") == 1
        assert f"applied {network}: 3 change(s)" in lines
        assert any(re.match(r"router er-1 online at tls://", x) for x in lines), lines
        ca = next(x.split("CA bundle: ")[1].split()[0] for x in lines if "CA bundle: " in x)
        with ZitiClient.connect(found["ctrl1"][1], ca=ca) as first:
            first.login("admin", "admin")
            [router] = first.management.list_edge_routers(filter='name = "er-1"')
            assert router["isOnline"] is True
        for instance, (_, url) in found.items():  # written through the first member, present on each
            with ZitiClient.connect(url, ca=ca) as member:
                member.login("admin", "admin")
                names = {i["name"] for i in member.management.iterate("listIdentities")}
                assert "alice" in names, instance
                assert [s["name"] for s in member.management.list_services()] == ["web"], instance
                online = time.monotonic() + 15  # the router connects to every member the first one lists
                while not member.management.list_edge_routers(filter='name = "er-1"')[0]["isOnline"]:
                    assert time.monotonic() < online, f"er-1 is not online on {instance}"
                    time.sleep(0.1)
    finally:
        stop(proc, errors)
    for _, url in found.values():  # every member stopped with it
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{url}/version", verify=False, timeout=2)


def test_up_again_on_the_same_data_folder_restarts_the_same_members_with_their_data(tmp_path):
    network, data = tmp_path / "net.yaml", tmp_path / "data"
    network.write_text(NETWORK.replace("edgeRouters:\n  - {name: er-1, process: true}\n", ""))
    runs = []
    for _ in range(2):
        proc, lines, errors = harness_up(network, data)
        try:
            runs.append((members(lines), [x for x in lines if x.startswith("applied ")]))
        finally:
            stop(proc, errors)
    (first, applied_first), (second, applied_second) = runs
    assert {k: url for k, (_, url) in first.items()} == {k: url for k, (_, url) in second.items()}
    assert applied_first == [f"applied {network}: 2 change(s)"]
    assert applied_second == [f"applied {network}: 0 change(s)"]  # the members kept what the first run wrote


@pytest.mark.parametrize("value", ["0", "two", "true", "-3"])
def test_a_controllers_value_that_is_not_a_count_is_one_line_and_exit_2(tmp_path, value):
    network = tmp_path / "net.yaml"
    network.write_text(f"controllers: {value}\n")
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "up", str(network), "--port", "0", "--exit-after-start"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )
    assert done.returncode == 2, done.stderr
    assert re.search(rf"net\.yaml: controllers: .*{re.escape(value) if value != 'true' else 'True'}", done.stderr)


@pytest.mark.parametrize("value", [0, -1, True, 2.5, "3"])
def test_a_network_built_in_python_refuses_a_controllers_value_that_is_not_a_count(value):
    with pytest.raises(NetworkError, match="controllers must be a whole number"):
        Network.from_dict({"controllers": value})


def test_a_network_without_controllers_has_one_and_a_cluster_size_is_kept():
    assert Network.from_dict({}).controllers == 1
    assert Network.from_dict({"controllers": 5, "services": [{"name": "s"}]}).controllers == 5


def test_a_cluster_port_in_use_is_one_line_naming_the_option_and_exit_4(tmp_path):
    import socket

    network = tmp_path / "net.yaml"
    network.write_text("controllers: 3\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli", "up", str(network), "--port", str(port), "--exit-after-start"],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=DEADLINE,
        )
    assert done.returncode == 4, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: --port {port} is in use: give another with --port (0 picks a free one)"
    )
    assert not (tmp_path / "data").exists()


def test_a_member_whose_control_port_was_taken_meanwhile_is_started_again_a_bounded_number_of_times(tmp_path):
    """A port a member picks at each start (the control channel's ``0``) can be taken by another process between
    its choice and its bind: the harness starts the member again, at most RELAUNCHES times, then says why."""
    import socket

    from harness.processes.cluster import RELAUNCHES, ClusterError, ZitiCluster

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        options = ("--no-router", "--http-port", "0", "--ctrl-port", str(port), "--log-level", "warning")
        with pytest.raises(ClusterError, match="--ctrl-port"):
            with ZitiCluster(1, root=tmp_path / "cluster", options=options):
                pass
    log = (tmp_path / "cluster" / "ctrl1.log").read_text()
    assert log.count(f"control channel port {port} on 127.0.0.1 is in use") == RELAUNCHES + 1
