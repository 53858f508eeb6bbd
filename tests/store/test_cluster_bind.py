"""A member whose raft port is taken by the time PySyncObj binds it gives up at once with RaftPortInUse (which the
start reports as a listener's port in use), instead of waiting a minute for a leader."""

from __future__ import annotations

import errno
import socket

import pytest

from controller.cluster.member import Cluster, ClusterConfig, RaftPortInUse
from controller.cluster.settings import RaftSettings
from controller.store.db import Store
from harness.processes.routers import free_port


def test_a_taken_raft_port_is_raft_port_in_use_within_the_bind_retries(tmp_path):
    port = free_port()
    settings = RaftSettings(bind_retries=5, bind_retry=0.1)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen(1)
        with pytest.raises(RaftPortInUse) as caught:
            Cluster(Store(None), tmp_path / "raft", ClusterConfig("m1", f"127.0.0.1:{port}", settings=settings), "pw")
    assert (caught.value.host, caught.value.port) == ("127.0.0.1", port)
    assert caught.value.errno == errno.EADDRINUSE and f"raft port {port} on 127.0.0.1 is in use" in str(caught.value)


def test_the_raft_port_listens_on_the_members_raft_address_only(tmp_path):
    port = free_port()
    cluster = Cluster(Store(None), tmp_path / "raft", ClusterConfig("m1", f"127.0.0.1:{port}"), "pw")
    try:
        with socket.socket() as beside:  # another loopback address, same port: free unless raft took every interface
            beside.bind(("127.0.0.2", port))
            beside.listen(1)
        with socket.socket() as same, pytest.raises(OSError):
            same.bind(("127.0.0.1", port))
            same.listen(1)
    finally:
        cluster.close()
