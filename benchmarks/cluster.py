"""A 3-member cluster (processes, PySyncObj raft) beside a single controller process, in the same run.

Figures: durable creates per second and p50/p99 latency (``POST /identities`` from
concurrent writers over HTTPS, every write fsynced in the store; in the cluster also
committed on a majority and applied in the writer's member), their ratios to the single
controller's (targets: throughput at least 0.5 of it, p99 at most 3 times); the time from
kill -9 of the leader to the first acknowledged write on another member; the RSS of one
member after the load; a stopped member's catch-up after its restart (entities written
while it was down; snapshot + log: the raft log is compacted meanwhile), beside the restart
of a member with nothing to catch up.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

WRITERS = 8
#: entities written while a member is down, and the raft snapshot threshold then (full run, --quick)
CATCH_UP = (100_000, 20_000)
CATCH_UP_QUICK = (5_000, 1_000)


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _load(clients: list, seconds: float, prefix: str) -> tuple[int, list[float]]:
    """``WRITERS`` threads creating identities for ``seconds``; (acknowledged, latencies in ms)."""
    latencies: list[float] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def writer(number: int) -> None:
        client = clients[number % len(clients)]
        seq = 0
        mine = []
        while time.monotonic() < stop_at and seq < 100_000:
            body = {"name": f"{prefix}-{number}-{seq}", "type": "Device", "isAdmin": False}
            started = time.perf_counter()
            response = client.raw.post(
                "/edge/management/v1/identities", json=body, headers={"zt-session": client.session_token}
            )
            if response.status_code == 201:
                mine.append((time.perf_counter() - started) * 1000)
            seq += 1
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 60)
    return len(latencies), latencies


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


def _single(root: Path, seconds: float) -> dict:
    from harness.client import ZitiClient
    from harness.processes.cluster import _port_pair

    port, _ = _port_pair()
    ready = root / "single.ready.json"
    command = [sys.executable, "-m", "controller", "--data", str(root / "single"), "--port", str(port)]
    command += ["--http-port", "0", "--no-router", "--ctrl-port", "0", "--log-level", "warning"]
    command += ["--ready-file", str(ready)]
    with open(root / "single.log", "ab") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("the single controller did not start")
            time.sleep(0.05)
        ca = str(root / "single" / "pki" / "root-ca.cert.pem")
        clients = [
            ZitiClient.connect(f"https://127.0.0.1:{port}", ca=ca).signed_in("admin", "admin") for _ in range(WRITERS)
        ]
        count, latencies = _load(clients, seconds, "single")
        for client in clients:
            client.close()
        return {"count": count, "latencies": latencies, "rss": _rss_mb(process.pid)}
    finally:
        process.terminate()
        process.wait(20)


def _cluster(root: Path, seconds: float) -> dict:
    from harness.processes.cluster import ZitiCluster

    with ZitiCluster(3, root=root / "cluster") as cluster:
        clients = [cluster.client(n % 3) for n in range(WRITERS)]
        count, latencies = _load(clients, seconds, "cluster")
        for client in clients:
            client.close()
        rss = _rss_mb(cluster.members[0].process.pid)
        leader = cluster.leader()
        other = next(i for i in range(3) if i != leader)
        client = cluster.client(other)
        cluster.kill(leader)
        killed = time.perf_counter()
        first = None
        for seq in range(400):
            response = client.raw.post(
                "/edge/management/v1/identities",
                json={"name": f"after-kill-{seq}", "type": "Device", "isAdmin": False},
                headers={"zt-session": client.session_token},
            )
            if response.status_code == 201:
                first = (time.perf_counter() - killed) * 1000
                break
        client.close()
        return {"count": count, "latencies": latencies, "rss": rss, "failover_ms": first}


def _create(clients: list, total: int, prefix: str) -> int:
    """``total`` identities from ``2 * WRITERS`` threads over ``clients``; how many were acknowledged."""
    threads_count = 2 * WRITERS
    done = [0] * threads_count

    def writer(number: int) -> None:
        client = clients[number % len(clients)]
        for seq in range(number, total, threads_count):
            body = {"name": f"{prefix}-{seq}", "type": "Device", "isAdmin": False}
            response = client.raw.post(
                "/edge/management/v1/identities", json=body, headers={"zt-session": client.session_token}
            )
            done[number] += response.status_code == 201

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(3600)
    return sum(done)


def _identity_count(client) -> int:
    response = client.raw.get(
        "/edge/management/v1/identities", params={"limit": 1}, headers={"zt-session": client.session_token}
    )
    response.raise_for_status()
    return response.json()["meta"]["pagination"]["totalCount"]


def _catch_up(root: Path, count: int, threshold: int) -> dict:
    """Stop a follower, write ``count`` identities, restart it: seconds until it serves them all."""
    from harness.processes.cluster import ZitiCluster

    options = (*ZitiCluster.options, "--raft-snapshot-threshold", str(threshold))
    with ZitiCluster(3, root=root / "catch-up", options=options) as cluster:
        leader = cluster.leader()
        down = next(i for i in range(3) if i != leader)
        with cluster.client(down) as client:
            before = _identity_count(client)
        cluster.stop(down)
        clients = [cluster.client(i) for i in range(3) if i != down]
        written = _create(clients, count, "catch-up")
        for client in clients:
            client.close()
        started = time.perf_counter()
        cluster.restart(down)
        ready = time.perf_counter() - started
        with cluster.client(down) as client:
            deadline = time.monotonic() + 600
            while _identity_count(client) < before + written and time.monotonic() < deadline:
                time.sleep(0.05)
            caught_up = time.perf_counter() - started
            complete = _identity_count(client) >= before + written
        snapshots = sum(1 for m in cluster.members if (m.folder / "raft" / "raft.snapshot").exists())
        started = time.perf_counter()
        cluster.restart(down)  # the anchor: the same restart with nothing to catch up
        anchor = time.perf_counter() - started
    return {
        "written": written,
        "ready": ready,
        "caught_up": caught_up if complete else float("nan"),
        "anchor": anchor,
        "snapshots": snapshots,
    }


def main(quick: bool = False) -> dict:
    seconds = 4.0 if quick else 10.0
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as folder:
        root = Path(folder)
        single = _single(root, seconds)
        cluster = _cluster(root, seconds)
        count, threshold = CATCH_UP_QUICK if quick else CATCH_UP
        try:
            catch_up = _catch_up(root, count, threshold)
        except (RuntimeError, TimeoutError) as ex:  # a member that did not start: the other figures stand
            nan = float("nan")
            catch_up = {"written": 0, "ready": nan, "caught_up": nan, "anchor": nan, "snapshots": 0}
            print(f"  restart catch-up: not measured ({ex})", flush=True)
    single_rate = single["count"] / seconds
    cluster_rate = cluster["count"] / seconds
    single_p99 = _percentile(single["latencies"], 0.99)
    cluster_p99 = _percentile(cluster["latencies"], 0.99)
    return {
        f"single controller: durable creates/s ({WRITERS} writers)": single_rate,
        "single controller: create p50 (ms)": _percentile(single["latencies"], 0.5),
        "single controller: create p99 (ms)": single_p99,
        f"3-member cluster: durable creates/s ({WRITERS} writers)": cluster_rate,
        "3-member cluster: create p50 (ms)": _percentile(cluster["latencies"], 0.5),
        "3-member cluster: create p99 (ms)": cluster_p99,
        "cluster / single throughput (target >= 0.5)": cluster_rate / single_rate if single_rate else float("nan"),
        "cluster / single p99 (target <= 3)": cluster_p99 / single_p99 if single_p99 else float("nan"),
        "leader kill -9 to first acknowledged write (ms)": cluster["failover_ms"] or float("nan"),
        "one member's RSS after the load (MB)": cluster["rss"],
        "single controller's RSS after the load (MB)": single["rss"],
        "restart catch-up: entities written while a member was down": catch_up["written"],
        "restart catch-up: shape": (
            f"{count:,} entities, snapshot every {threshold:,} entries, {catch_up['snapshots']} of 3 members "
            + (f"with a snapshot (--quick; the full run writes {CATCH_UP[0]:,})" if quick else "with a snapshot")
        ),
        "restart catch-up: restart to ready (s)": catch_up["ready"],
        "restart catch-up: restart to serving every entity (s)": catch_up["caught_up"],
        "restart with nothing to catch up, the anchor (s)": catch_up["anchor"],
    }
