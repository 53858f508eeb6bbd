"""A cluster member whose raft port is taken says so at once (exit 4, the port and the option), as every other
listener does, instead of waiting a minute for a leader it cannot elect."""

from __future__ import annotations

import socket
import subprocess
import sys

from harness.processes.cluster import _port_pair


def test_a_taken_raft_port_is_refused_at_start_with_the_option_to_change(tmp_path):
    port, raft_port = _port_pair()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", raft_port))
        taken.listen(1)
        done = subprocess.run(
            [sys.executable, "-m", "controller", "--data", str(tmp_path / "c1"), "--instance-id", "c1"]
            + ["--port", str(port), "--no-router", "--http-port", "0", "--ctrl-port", "0", "--cluster"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 4, done.stdout + done.stderr
    assert f"raft port {raft_port} on 127.0.0.1 is in use" in done.stderr
    assert "--raft-port PORT" in done.stderr


def test_a_members_ports_are_both_below_the_kernels_own_range():
    """A cluster restarted on its kept ports finds them free: no outgoing connection was given one meanwhile."""
    from controller.server.lifecycle import ephemeral_ports

    low = ephemeral_ports()[0]
    pairs = [_port_pair() for _ in range(10)]
    assert all(port < low and raft_port < low for port, raft_port in pairs), pairs
