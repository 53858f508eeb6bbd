"""The real HA quickstart test's sequence with this project's ``ziti``: ha, two joins, a leader, verify traffic."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from harness.processes.cluster import _port_pair
from harness.processes.routers import free_port
from tests.ziti.conftest import READY, ROOT, env_for


class Member:
    def __init__(self, ziti, mode: str, home, instance_id: str, *extra: str, ports: tuple[int, int] | None = None):
        self.instance_id = instance_id
        self.ctrl_port, self.router_port = ports or (_port_pair()[0], free_port())
        command = [sys.executable, "-m", "harness.ziti", "edge", "quickstart", mode]
        command += ["--ctrl-address", "127.0.0.1", "--router-address", "127.0.0.1", "--home", str(home)]
        command += ["--trust-domain", "T", "--instance-id", instance_id, "-i", instance_id]
        command += ["--ctrl-port", str(self.ctrl_port), "--router-port", str(self.router_port), *extra]
        self.proc = subprocess.Popen(
            command, cwd=ROOT, env=env_for(ziti.home), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.lines: list[str] = []
        self.ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if "--instance-id" in line and any(READY in seen for seen in self.lines):
                self.ready.set()

    def wait_ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while not self.ready.wait(0.1):
            if self.proc.poll() is not None:
                self._reader.join(5)
                raise AssertionError(f"{self.instance_id}:\n" + "\n".join(self.lines))
            assert time.monotonic() < deadline, "\n".join(self.lines)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@pytest.fixture
def members():
    started: list[Member] = []
    yield started
    for member in started:
        member.stop()


def test_ha_then_two_joins_elect_a_leader_and_carry_traffic(ziti, tmp_path, members):
    home = tmp_path / "H"
    first = Member(ziti, "ha", home, "inst1")
    members.append(first)
    first.wait_ready()
    output = "\n".join(first.lines)
    assert "Quickly add another member to this cluster using:" in output
    assert f"--cluster-member tls:127.0.0.1:{first.ctrl_port}" in output
    for instance_id in ("inst2", "inst3"):
        member = Member(ziti, "join", home, instance_id, "--cluster-member", f"tls:127.0.0.1:{first.ctrl_port}")
        members.append(member)
        member.wait_ready()

    deadline = time.monotonic() + 20
    while True:
        listing = ziti.ok("ops", "cluster", "list", "-i", "inst3")
        rows = [[c.strip() for c in line.strip("│").split("│")] for line in listing.splitlines() if "│ inst" in line]
        if len(rows) == 3 and [row[3] for row in rows].count("true") == 1:  # a row shows the leader
            break
        assert time.monotonic() < deadline, listing
        time.sleep(0.5)
    assert "│ ID    │ ADDRESS             │ VOTER │ LEADER │ VERSION" in listing

    done = ziti("ops", "verify", "traffic", "-i", "inst2", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "traffic test successfully detected" in done.stdout + done.stderr

    # the same command on the same home restarts that member, which catches up
    third = members[2]
    third.stop()
    ziti.ok("edge", "create", "service", "made-while-inst3-was-down", "-i", "inst1")
    restarted = Member(
        ziti,
        "join",
        home,
        "inst3",
        "--cluster-member",
        f"tls:127.0.0.1:{first.ctrl_port}",
        ports=(third.ctrl_port, third.router_port),
    )
    members.append(restarted)
    restarted.wait_ready()
    listed = ziti.ok("edge", "list", "services", "-i", "inst3")
    assert "made-while-inst3-was-down" in listed


def test_join_without_a_cluster_member_says_what_to_do(ziti, tmp_path):
    done = ziti("edge", "quickstart", "join", "--home", str(tmp_path / "H"), "--instance-id", "inst2")
    assert done.returncode == 2
    assert "--cluster-member is required" in done.stderr
