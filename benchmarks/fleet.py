"""Fleet scale: SDKs that behave as libziti 1.x does, polling one controller in its own process.

Run: ``python -m benchmarks --only fleet [--quick]``, or ``python -m benchmarks.fleet [--sizes 1000,5000]``.

One controller runs as its own process at its default log level, with a fresh data folder. The driver
(``harness.dataplane.fleet``, one asyncio loop in this process) provisions a CA of its own with auto-enrollment,
then for each size starts that many SDKs (OIDC certificate login, one keep-alive TLS connection each,
``service-updates`` every 10 s, edge routers every 60 s), their logins spread over a ramp the controller
can take, and measures the steady polls after every SDK has polled once: p50/p99/max, the controller's
CPU (one core = 100) and the growth of its RSS over its idle RSS, per SDK, and its RSS after they leave.
The anchor, in the same run: the same driver polling a bare asyncio TLS server in its own process
(``benchmarks.bare_hello``) with the smallest fleet. Then a login storm: N enrolled SDKs log in at once
(OIDC), timed until the last holds its tokens. Then the steady figure again, the fleet spread over a 3-member
cluster (processes), and first of all what one idle TLS connection costs, part by part
(``benchmarks.connection_memory``).

The driver shares the machine's two cores with the controller: its own cost is in every latency.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from controller.server.serve import free_port
from harness.client import ZitiClient
from harness.client import pki as hp
from harness.dataplane import flows
from harness.dataplane.fleet import Fleet, Schedule, _cpu_seconds, _rss_mb, provision

FULL_SIZES, QUICK_SIZES = (1000, 5000, 10000), (200, 500)
FULL_STORM, QUICK_STORM = 1000, 200
#: SDK channels held on one router, and the dials timed while they are held
FULL_CHANNELS, QUICK_CHANNELS, DIALS = 10000, 1000, 100
#: the router's SDK listener takes at most 4,096 connections from one address: the channels come from several
#: logins per second the ramp asks of the controller while a fleet starts
RAMP_RATE = 100.0


def start_controller(folder: Path, tree: str | None = None) -> tuple[subprocess.Popen, str, str]:
    """The controller as its own process; ``tree``: another checkout whose ``controller`` package runs instead."""
    https, http = free_port(), free_port()
    env = {**os.environ, "PYTHONPATH": tree} if tree else None
    log = open(folder / "controller.log", "w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "controller",
            "--data",
            str(folder / "data"),
            "--port",
            str(https),
            "--http-port",
            str(http),
            "--no-router",
            "--ctrl-port",
            "0",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=tree,
    )
    url = f"http://127.0.0.1:{http}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/edge/client/v1/version", timeout=1).status_code == 200:
                return process, url, f"https://127.0.0.1:{https}"
        except httpx.HTTPError:
            pass
        if process.poll() is not None:
            break
        time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"the controller did not start: see {folder / 'controller.log'}")


def start_bare_hello(folder: Path) -> tuple[subprocess.Popen, str, str]:
    root = hp.make_root_ca("bare hello CA")
    leaf = hp.make_leaf(root, "127.0.0.1", ips=["127.0.0.1"], eku=("serverAuth",))
    pem = folder / "hello.pem"
    pem.write_text(leaf.cert_pem + leaf.key_pem)
    process = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.bare_hello", str(pem)], stdout=subprocess.PIPE, text=True
    )
    port = int(process.stdout.readline().split()[1])
    return process, f"https://127.0.0.1:{port}", root.cert_pem


async def _hold_and_dial(folder: Path, ports: dict, pid: int, count: int) -> dict:
    from benchmarks.router import rss_mib
    from harness.dataplane import DataPlane
    from harness.dataplane.sync import load_identity_file
    from harness.processes.quickstart import new_quickstart
    from router.wire import ContentType, Header, Message, read_message

    admin = ZitiClient.connect(f"http://127.0.0.1:{ports['http']}")
    admin.login("admin", "admin")
    urls = {"controller_url": f"https://127.0.0.1:{ports['https']}", "router_url": f"tls://127.0.0.1:{ports['router']}"}
    qs = new_quickstart(admin, folder / "channels", "fleet-echo", encrypted=False, **urls)
    host, guest = (DataPlane(*load_identity_file(path)) for path in (qs.binder, qs.dialer))

    async def echo(conn):
        while data := await conn.recv():
            await conn.send(data)

    await host.bind("fleet-echo", echo)
    await (await guest.dial("fleet-echo")).close()  # the dialer's own channel and the service's path are warm
    client, identity = load_identity_file(qs.dialer)
    context = ssl.create_default_context(cadata=identity.ca_pem)
    context.load_cert_chain(*identity.cert_key().write(folder, "channels"))
    hello = Message(ContentType.HELLO, b"fleet", {Header.SESSION_TOKEN: client.token.encode()}, seq=1).encode()
    held: list = []
    idle = rss_mib(pid)
    try:
        for index in range(count):
            sock = socket.socket()
            sock.bind((f"127.0.0.{2 + index // 4000}", 0))
            sock.setblocking(False)
            await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", ports["router"]))
            reader, writer = await asyncio.open_connection(sock=sock, ssl=context, server_hostname="127.0.0.1")
            writer.write(hello)
            await read_message(reader)
            held.append(writer)
        await asyncio.sleep(2.0)  # the last hellos' work is done
        with_channels = rss_mib(pid)
        times = []
        for _ in range(DIALS):
            started = time.perf_counter()
            conn = await guest.dial("fleet-echo")
            await conn.send(b"x")
            await conn.recv_exactly(1)
            times.append((time.perf_counter() - started) * 1000)
            await conn.close()
    finally:
        for writer in held:
            writer.close()
        await host.close()
        await guest.close()
    times.sort()
    return {
        f"router: {count:,} SDK channels: RSS MiB idle -> held (KiB per channel)": (
            f"{idle:.0f} -> {with_channels:.0f} ({(with_channels - idle) * 1024 / count:.1f})"
        ),
        f"router: dial + first echo with them held, p50 / p99 (ms, {DIALS} dials)": (
            f"{times[len(times) // 2]:.1f} / {times[int(len(times) * 0.99) - 1]:.1f}"
        ),
    }


def router_channels(folder: Path, count: int) -> dict:
    """A controller with its edge router (one process); ``count`` SDK channels (TLS with the client certificate, a
    hello) held on the router: its RSS per channel, and dials through it while they are held."""
    from benchmarks.router import start_controller as start_with_router

    folder.mkdir(parents=True, exist_ok=True)
    process, ports = start_with_router(folder / "data")
    try:
        return asyncio.run(_hold_and_dial(folder, ports, process.pid, count))
    finally:
        process.terminate()
        process.wait(30)


def enroll_all(url, ca: str, identities: list, batch: int = 250) -> None:
    """Enroll every identity (CA auto-enrollment) before the idle RSS is read: an identity's records are the
    network's data, kept whether its SDK polls or not, so the per-SDK figures count what polling clients hold."""

    async def run() -> None:
        sdks = Fleet(url, ca, identities).sdks
        for start in range(0, len(sdks), batch):
            group = sdks[start : start + batch]
            await asyncio.gather(*(sdk.enroll() for sdk in group))
            for sdk in group:
                sdk.close()

    asyncio.run(run())


def settled_rss(pids: list[int], most: float = 15.0) -> float:
    """The processes' summed RSS once it stopped falling (the server gives memory back on a thread after a drop),
    read every second for at most ``most`` seconds."""
    deadline, last = time.monotonic() + most, None
    while True:
        time.sleep(1.0)
        now = sum(_rss_mb(pid) or 0.0 for pid in pids)
        if (last is not None and last - now < 1.0) or time.monotonic() >= deadline:
            return now
        last = now


class _MembersWatch:
    """The summed RSS (highest seen) and CPU of a cluster's member processes, sampled every second on a thread."""

    def __init__(self, pids: list[int]):
        self.pids, self.highest_mb, self._stop = pids, 0.0, threading.Event()
        self.cpu_started = sum(_cpu_seconds(pid) or 0.0 for pid in pids)
        self.started = time.monotonic()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(1.0):
            self.highest_mb = max(self.highest_mb, self.rss_mb())

    def rss_mb(self) -> float:
        return sum(_rss_mb(pid) or 0.0 for pid in self.pids)

    def stop(self) -> float:
        """Stop sampling; the members' CPU % since the start (one core = 100), summed."""
        self._stop.set()
        self._thread.join(5)
        cpu = sum(_cpu_seconds(pid) or 0.0 for pid in self.pids) - self.cpu_started
        return cpu * 100 / max(1e-9, time.monotonic() - self.started)


def cluster_steady(folder: Path, size: int, quick: bool) -> dict:
    """The steady figure against a 3-member cluster (processes): ``size`` SDKs spread evenly over the members."""
    from harness.processes.cluster import ZitiCluster

    options = ("--no-router", "--http-port", "0", "--ctrl-port", "0")  # the default log level, as the single's
    figures: dict = {}
    cluster = ZitiCluster(3, root=folder / "cluster", options=options)
    try:
        try:
            cluster.start()
        except (RuntimeError, TimeoutError) as ex:  # what the member not ready said last
            last = [m.log.read_text().strip().splitlines()[-1:] for m in cluster.members if m.log and m.log.exists()]
            raise RuntimeError(f"{ex}; last log lines: {last}") from ex
        admin = cluster.client(0)
        ca = flows.ca_bundle(admin)
        identities = provision(admin, size)
        urls = [member.url for member in cluster.members]
        enroll_all(urls, ca, identities)
        pids = [member.process.pid for member in cluster.members]
        time.sleep(2.0)
        idle = sum(_rss_mb(pid) or 0.0 for pid in pids)
        watch = _MembersWatch(pids)
        summary = steady(Fleet(urls, ca, identities), size, quick)
        cpu = watch.stop()
        label = f"3 members, {size:>6,} SDKs"
        figures[f"{label}: poll p50 / p99 / max (ms)"] = (
            f"{summary['p50_ms']:.2f} / {summary['p99_ms']:.2f} / {summary['max_ms']:.0f}"
        )
        figures[f"{label}: errors, logged in"] = f"{summary['errors']}, {summary['logged_in']}"
        if summary["first_error"]:
            figures[f"{label}: first error"] = summary["first_error"][:100]
        figures[f"{label}: members' CPU % summed (per 1,000 SDKs)"] = f"{cpu:.0f} ({cpu * 1000 / size:.1f})"
        figures[f"{label}: members' RSS MB summed (KB per SDK over idle)"] = (
            f"{idle:.0f} -> {watch.highest_mb:.0f} ({(watch.highest_mb - idle) * 1024 / size:.1f})"
        )
        figures[f"{label}: members' RSS MB after they left"] = round(settled_rss(pids), 1)
    finally:
        cluster.close()
    return figures


def steady(fleet: Fleet, size: int, quick: bool) -> dict:
    ramp = max(10.0, size / RAMP_RATE)
    measure = 20.0 if quick else 30.0
    driver = _cpu_seconds(os.getpid())
    report = fleet.run_sync(ramp + 10.0 + measure, ramp=ramp)
    driver = (_cpu_seconds(os.getpid()) - driver) * 100 / max(1e-9, len(report.seconds))
    return {**report.summary(), "first_error": report.errors[0] if report.errors else "", "driver_cpu": driver}


def main(
    quick: bool = False,
    sizes: tuple[int, ...] | None = None,
    storm: int | None = None,
    tree: str | None = None,
    cluster_size: int | None = None,
) -> dict:
    sizes = sizes or (QUICK_SIZES if quick else FULL_SIZES)
    storm = storm or (QUICK_STORM if quick else FULL_STORM)
    figures: dict = {}
    cluster_size = cluster_size or max(sizes)  # beside the single controller's largest fleet
    from benchmarks import connection_memory

    figures.update(connection_memory.main(quick))  # what one idle TLS connection costs, part by part
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        folder = Path(tmp)
        hello, hello_url, hello_ca = start_bare_hello(folder)
        try:
            anchor = Fleet(hello_url, hello_ca, [None] * sizes[0], schedule=Schedule(login="none"))
            summary = steady(anchor, sizes[0], quick)
            figures[f"anchor: bare hello, {sizes[0]} SDKs, poll p50 / p99 (ms)"] = (
                f"{summary['p50_ms']:.2f} / {summary['p99_ms']:.2f}"
            )
        finally:
            hello.kill()
            hello.wait()
        try:  # before the single controller: measured on a machine its 10,000 SDKs have not just left
            clustered = cluster_steady(folder, cluster_size, quick)
        except (RuntimeError, TimeoutError, OSError) as ex:  # the single controller's figures are still printed
            clustered = {f"3 members, {cluster_size:>6,} SDKs: not measured": str(ex)[:300]}
        process, url, https_url = start_controller(folder, tree)
        try:
            admin = ZitiClient.connect(url)
            admin.login("admin", "admin")
            ca = flows.ca_bundle(admin)
            identities = provision(admin, max(max(sizes), storm))
            enroll_all(https_url, ca, identities[: max(sizes)])
            time.sleep(2.0)
            idle_rss = _rss_mb(process.pid)
            figures["controller idle RSS (MB)"] = round(idle_rss, 1)
            for size in sizes:
                fleet = Fleet(https_url, ca, identities[:size], controller_pid=process.pid)
                summary = steady(fleet, size, quick)
                label = f"{size:>6,} SDKs"
                figures[f"{label}: polls/s"] = round(summary["polls_per_second"], 1)
                figures[f"{label}: poll p50 / p99 / max (ms)"] = (
                    f"{summary['p50_ms']:.2f} / {summary['p99_ms']:.2f} / {summary['max_ms']:.0f}"
                )
                figures[f"{label}: errors, logged in"] = f"{summary['errors']}, {summary['logged_in']}"
                if summary["first_error"]:
                    figures[f"{label}: first error"] = summary["first_error"][:100]
                figures[f"{label}: driver CPU % (its own ceiling is 100)"] = round(summary["driver_cpu"])
                cpu = summary["controller_cpu_percent"] or 0.0
                figures[f"{label}: controller CPU % (per 1,000 SDKs)"] = f"{cpu:.0f} ({cpu * 1000 / size:.1f})"
                rss = summary["controller_rss_mb"] or 0.0
                figures[f"{label}: controller RSS MB (KB per SDK over idle)"] = (
                    f"{rss:.0f} ({(rss - idle_rss) * 1024 / size:.1f})"
                )
                figures[f"{label}: controller RSS MB after they left"] = round(settled_rss([process.pid]), 1)
            before = _cpu_seconds(process.pid)
            stormed = Fleet(https_url, ca, identities[:storm]).login_storm()
            figures[f"login storm: {storm:,} SDKs hold tokens after (s)"] = round(stormed["seconds"], 2)
            figures[f"login storm: {storm:,} SDKs logged in / failed"] = f"{stormed['logged_in']} / {stormed['failed']}"
            if stormed["first_errors"]:
                figures["login storm: first error"] = stormed["first_errors"][0][:100]
            figures["login storm: controller CPU-s"] = round(_cpu_seconds(process.pid) - before, 2)
        finally:
            process.terminate()
            process.wait(10)
        figures.update(clustered)
        figures.update(router_channels(folder / "router", QUICK_CHANNELS if quick else FULL_CHANNELS))
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fleet")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", default=None, help="comma-separated fleet sizes (default 1000,5000,10000)")
    parser.add_argument("--storm", type=int, default=None, help="SDKs in the login storm (default 1000)")
    parser.add_argument("--controller-tree", default=None, help="run another checkout's controller (before/after)")
    parser.add_argument(
        "--cluster-size", type=int, default=None, help="SDKs over 3 members (default: the largest size)"
    )
    args = parser.parse_args()
    sizes = tuple(int(s) for s in args.sizes.split(",")) if args.sizes else None
    for key, value in main(args.quick, sizes, args.storm, args.controller_tree, args.cluster_size).items():
        print(f"  {key:<56} {value}")
