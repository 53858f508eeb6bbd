"""The edge router: round trips, bulk throughput, dials per second, memory held per connection.

Run: ``python -m benchmarks.router [--quick]``. The controller and its router run
as ``python -m controller`` in a subprocess (so its RSS is the router's process);
the harness's data plane is the SDK. Each figure is printed beside an anchor
measured in the same run on the same loopback:

* echo round trip p50/p99 (e2e encrypted service) vs a direct asyncio TLS echo, vs the same echo through a
  bare asyncio TLS relay in its own process (the floor for any router process: four process-to-process
  deliveries per round trip, where the direct echo has none), through a blocking thread-per-direction relay
  process (no event loop at all: the floor for any Python relay), and with two bare frame-speaking ends (the
  router's own share, without the SDK's e2ee and queues);
* one connection's bulk MB/s (unencrypted service) vs a bare asyncio TLS relay
  (its own process) in front of the same sink;
* dials per second (Connect until StateConnected, session cached) vs TLS connects per second;
* the process RSS with idle channels plus active circuits held, and with 1,000 circuits open;
* over a network of two in-process routers joined by a link (``--serve-network``, its own process):
  echo round trip and one connection's bulk MB/s over two hops (dialer on one router, binder on the
  other) beside one hop (both on the same router) and a direct TLS echo, and dials per second across
  the link beside dials on one router;
* dials per second as deployed (the controller and two linked routers each a process): across the link beside
  one hop, in the same run (``process_dials``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from harness.client import ZitiClient
from harness.client import pki as hp
from harness.dataplane import DataPlane, flows
from harness.dataplane.sync import load_identity_file
from harness.processes.quickstart import enroll_identity, new_quickstart
from harness.processes.server import free_port
from router import tls_transport
from router.channel import loop_on_thread
from router.wire import ContentType, Header, Message, i32, read_message, u32

ROOT = Path(__file__).resolve().parents[1]
CHUNK = 64 * 1024
#: stream buffer limit, the router's own (asyncio's 64 KiB default would throttle the anchors)
LIMIT = 2**20


def start_controller(folder: Path, *, router: bool = True) -> tuple[subprocess.Popen, dict]:
    """``python -m controller`` on free ports (with its edge router and the quickstart policies unless ``router`` is
    False: then routers run as their own processes on its control channel), returned once it serves."""
    ports = {name: free_port() for name in ("https", "http", *(["router"] if router else []))}
    edge = ["--router-port", str(ports["router"]), "--quickstart-policies"] if router else ["--no-router"]
    process = subprocess.Popen(
        [sys.executable, "-m", "controller", "--data", str(folder), "--port", str(ports["https"])]
        + ["--http-port", str(ports["http"]), *edge, "--ctrl-port", "0", "--log-level", "WARNING"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    for line in process.stdout:
        if "Ctrl-C stops it" in line:
            break
    return process, ports


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# -- anchors --------------------------------------------------------------------------
def anchor_tls(folder: Path) -> tuple[ssl.SSLContext, ssl.SSLContext, tuple[str, str]]:
    """A throwaway CA and a server certificate for 127.0.0.1 (server, client contexts, files)."""
    root = hp.make_root_ca("bench root")
    leaf = hp.make_leaf(root, "127.0.0.1", ips=["127.0.0.1"], eku=("serverAuth",))
    files = leaf.write(folder, "anchor")
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(*files)
    return server, hp.client_ssl_context(hp.pem(root.cert)), tuple(map(str, files))


async def serve_echo(reader, writer) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, ssl.SSLError):
        pass  # the connects/s anchor hangs up right after the handshake
    writer.close()


def make_sink(total: int):
    async def sink(reader, writer) -> None:
        seen = 0
        while seen < total and (data := await reader.read(CHUNK)):
            seen += len(data)
        writer.write(b"done")
        await writer.drain()
        writer.close()

    return sink


def _serve_tls(handler, port: int, files: tuple[str, str], ready) -> None:
    """Serve ``handler`` (asyncio streams) over TLS on ``port`` in this process until it is terminated."""

    async def main():
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*files)
        server = await asyncio.start_server(handler, "127.0.0.1", port, ssl=context, limit=LIMIT)
        ready.set()
        await server.serve_forever()

    asyncio.run(main())


def run_echo(port: int, target: int, files: tuple[str, str], ready) -> None:
    """The direct anchor's echo server (``serve_echo``) in a process of its own (``target`` unused): what a
    client and a server that talk TLS to each other without a router pay, two processes apart."""
    _serve_tls(serve_echo, port, files, ready)


def run_relay(port: int, target: int, files: tuple[str, str], ready) -> None:
    """A bare asyncio TLS relay: accept TLS, connect TLS to ``target``, copy both ways."""

    async def pipe(reader, writer):
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
        writer.close()

    async def handle(reader, writer):
        client = ssl.create_default_context()
        client.check_hostname, client.verify_mode = False, ssl.CERT_NONE
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target, ssl=client, limit=LIMIT)
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    _serve_tls(handle, port, files, ready)


def run_thread_relay(port: int, target: int, files: tuple[str, str], ready) -> None:
    """The same relay with blocking sockets and a thread per direction: no event loop between read and write
    (the shortest path a Python process can give a frame)."""

    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(*files)
    client = ssl.create_default_context()
    client.check_hostname, client.verify_mode = False, ssl.CERT_NONE

    def pipe(source, sink):
        with source, sink:
            while data := source.recv(CHUNK):
                sink.sendall(data)

    with socket.create_server(("127.0.0.1", port)) as listener:
        ready.set()
        while True:
            accepted, _ = listener.accept()
            downstream = server.wrap_socket(accepted, server_side=True)
            upstream = client.wrap_socket(socket.create_connection(("127.0.0.1", target)))
            for sock in (downstream, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=pipe, args=(downstream, upstream), daemon=True).start()
            threading.Thread(target=pipe, args=(upstream, downstream), daemon=True).start()


class RelayProcess:
    """``async with RelayProcess(run_relay, target, files, client_ctx) as (send, recv)``: a relay of that kind
    in its own process in front of ``target``, and one TLS connection through it."""

    def __init__(self, relay, target: int, files: tuple[str, str], context: ssl.SSLContext):
        self.relay, self.target, self.files, self.context = relay, target, files, context

    async def __aenter__(self):
        self.port = port = free_port()
        ready = multiprocessing.get_context("spawn").Event()
        self.process = multiprocessing.get_context("spawn").Process(
            target=self.relay, args=(port, self.target, self.files, ready), daemon=True
        )
        self.process.start()
        ready.wait(30)
        # the client's end on the same TLS transport as the harness's data plane that the router figures use
        reader, self.writer = await tls_transport.connect("127.0.0.1", port, self.context, limit=LIMIT)

        async def send(data):
            self.writer.write(data)
            await self.writer.drain()

        return send, reader.readexactly

    async def __aexit__(self, *exc):
        self.writer.close()
        self.process.terminate()


# -- measurements -------------------------------------------------------------------------
#: round trips sent before the measured ones (connections, caches and the loops warmed alike)
WARM_UP = 20


async def round_trips(send, recv, count: int) -> list[float]:
    """Milliseconds of ``count`` 64-byte echoes, after ``WARM_UP`` unmeasured ones."""
    out = []
    for index in range(WARM_UP + count):
        started = time.perf_counter()
        await send(b"x" * 64)
        await recv(64)
        if index >= WARM_UP:
            out.append((time.perf_counter() - started) * 1000)
    return out


async def echo_percentiles(send, recv, count: int) -> tuple[float, float]:
    """p50 and p99 (ms) of ``count`` echoes (see ``round_trips``)."""
    return percentiles(await round_trips(send, recv, count))


def percentiles(samples: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(samples, n=100)
    return cuts[49], cuts[98]


async def bulk(send, recv, total: int) -> float:
    block = os.urandom(CHUNK)
    started = time.perf_counter()
    for _ in range(total // CHUNK):
        await send(block)
    assert await recv(4) == b"done"
    return total / (time.perf_counter() - started) / 1e6


async def hold_channels(router: tuple[str, int], context: ssl.SSLContext, token: str, count: int) -> list:
    held = []
    for _ in range(count):
        reader, writer = await asyncio.open_connection(*router, ssl=context)
        writer.write(Message(ContentType.HELLO, b"bench", {Header.SESSION_TOKEN: token.encode()}, seq=1).encode())
        await read_message(reader)
        held.append(writer)
    return held


async def _raw_channel(port: int, identity_file: Path, folder: Path):
    client, identity = load_identity_file(identity_file)
    context = ssl.create_default_context(cadata=identity.ca_pem)
    context.load_cert_chain(*identity.cert_key().write(folder, identity_file.stem))
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context, limit=LIMIT)
    writer.write(Message(ContentType.HELLO, b"bench", {Header.SESSION_TOKEN: client.token.encode()}, seq=1).encode())
    await read_message(reader)
    return client, reader, writer


async def raw_round_trips(qs, port: int, folder: Path, count: int) -> list[float]:
    """Echo round trips between a dialer and a host that speak bare frames (Bind, Connect, Data)."""
    host_client, host_reader, host_writer = await _raw_channel(port, qs.binder, folder)
    token = (await asyncio.to_thread(flows.dial, host_client, qs.service, "Bind"))["token"].encode()
    bind = {Header.CONN_ID: u32(1), Header.SUPPORTS_BIND_SUCCESS: b"\x01"}
    host_writer.write(Message(ContentType.BIND, token, bind, seq=2).encode())
    await read_message(host_reader), await read_message(host_reader)  # StateConnected, BindSuccess
    guest_client, guest_reader, guest_writer = await _raw_channel(port, qs.dialer, folder)
    token = (await asyncio.to_thread(flows.dial, guest_client, qs.service, "Dial"))["token"].encode()
    guest_writer.write(Message(ContentType.CONNECT, token, {Header.CONN_ID: u32(1)}, seq=2).encode())
    dial = await read_message(host_reader)
    host_conn = dial.int_header(Header.ROUTER_PROVIDED_CONN_ID)
    accepted = {Header.CONN_ID: u32(1), Header.REPLY_FOR: i32(dial.seq)}
    host_writer.write(Message(ContentType.DIAL_SUCCESS, u32(host_conn), accepted, seq=3).encode())
    assert (await read_message(guest_reader)).content_type == ContentType.STATE_CONNECTED

    async def host():
        while True:
            message = await read_message(host_reader)
            if message.content_type == ContentType.DATA:
                host_writer.write(Message(ContentType.DATA, message.body, {Header.CONN_ID: u32(host_conn)}).encode())

    serving = asyncio.get_running_loop().create_task(host())
    data = Message(ContentType.DATA, b"x" * 64, {Header.CONN_ID: u32(1)}).encode()

    async def send(_):
        guest_writer.write(data)

    async def recv(_):
        while (await read_message(guest_reader)).content_type != ContentType.DATA:
            pass

    out = await round_trips(send, recv, count)
    serving.cancel()
    for writer in (host_writer, guest_writer):
        writer.close()
    for client in (host_client, guest_client):
        client.close()
    return out


def real_sdk_figures(admin: ZitiClient, qs, echo_port: int, shape: dict) -> dict:
    """Echo round trips between two real C SDKs (``benchmarks.sdk_echo``, a process each) through the router,
    beside the same client code over plain TLS to the echo process: what an SDK user sees."""
    try:
        import openziti  # noqa: F401
    except ImportError:
        return {"real SDK echo": "not measured (pip install openziti)"}
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "ZITI_LOG": "1", "PYTHONPATH": str(ROOT)}

    def run(*args: str) -> list[float]:
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.sdk_echo", *args], capture_output=True, text=True, timeout=120, env=env
        )
        if done.returncode != 0:
            raise RuntimeError(f"sdk_echo {args[0]}: {done.stderr.strip()[-300:]}")
        return [float(part) for part in done.stdout.split()[-2:]]

    host = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.sdk_echo", "serve", str(qs.binder), qs.service],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        if host.stdout.readline().strip() != "BOUND":
            raise RuntimeError("the real SDK host did not bind")
        service = admin.management.list_services(filter=f'name="{qs.service}"')[0]["id"]
        deadline = time.monotonic() + 30
        while not admin.management.list_service_terminators(service):
            if time.monotonic() > deadline:
                raise RuntimeError("the real SDK host's terminator never appeared")
            time.sleep(0.05)
        count = str(shape["round_trips"])
        routed = run("ping", str(qs.dialer), qs.service, count)
        direct = run("ping-tls", str(echo_port), count)
    finally:
        host.kill()
        host.wait(10)
    return {
        "real SDK echo p50 via router (ms)": routed[0],
        "real SDK echo p99 via router (ms)": routed[1],
        "same client, plain TLS to the echo process, p50 (ms)": direct[0],
        "same client, plain TLS to the echo process, p99 (ms)": direct[1],
        "real SDK echo p50 ratio router / direct": routed[0] / direct[0],
    }


async def scenario(ports: dict, folder: Path, pid: int, shape: dict) -> dict:
    admin = ZitiClient.connect(f"http://127.0.0.1:{ports['http']}")
    admin.login("admin", "admin")
    urls = {"controller_url": f"https://127.0.0.1:{ports['https']}", "router_url": f"tls://127.0.0.1:{ports['router']}"}
    echo_qs = new_quickstart(admin, folder / "echo", "bench-echo", **urls)
    plain_qs = new_quickstart(admin, folder / "plain", "bench-plain", encrypted=False, **urls)
    bulk_qs = new_quickstart(admin, folder / "bulk", "bench-bulk", encrypted=False, **urls)
    raw_qs = new_quickstart(admin, folder / "raw", "bench-raw", encrypted=False, **urls)
    server_ctx, client_ctx, files = anchor_tls(folder)
    figures = {}

    async def echo(conn):
        while data := await conn.recv():
            await conn.send(data)

    async def sink(conn):
        seen = 0
        while seen < shape["bulk"] and (data := await conn.recv()):
            seen += len(data)
        await conn.send(b"done")

    planes = [
        DataPlane(*load_identity_file(path))
        for path in (echo_qs.binder, echo_qs.dialer, bulk_qs.binder, bulk_qs.dialer, plain_qs.binder, plain_qs.dialer)
    ]
    echo_host, echo_guest, bulk_host, bulk_guest, plain_host, plain_guest = planes
    await echo_host.bind("bench-echo", echo)
    await plain_host.bind("bench-plain", echo)
    await bulk_host.bind("bench-bulk", sink)

    # round trips: TLS on each leg, as the direct echo has (the router's own cost), and with the SDKs'
    # end-to-end encryption on top (its cost is the two SDKs', paid with or without a router)
    plain = await plain_guest.dial("bench-plain")
    routed = await echo_percentiles(plain.send, plain.recv_exactly, shape["round_trips"])
    await plain.close()
    conn = await echo_guest.dial("bench-echo")
    sealed = await echo_percentiles(conn.send, conn.recv_exactly, shape["round_trips"])
    echo_server = await asyncio.start_server(serve_echo, "127.0.0.1", 0, ssl=server_ctx)
    reader, writer = await asyncio.open_connection("127.0.0.1", echo_server.sockets[0].getsockname()[1], ssl=client_ctx)

    async def send(data):
        writer.write(data)
        await writer.drain()

    direct = await echo_percentiles(send, reader.readexactly, shape["round_trips"])
    writer.close()
    # the same echo through a bare asyncio TLS relay in its own process: the floor for any router process
    # (four process-to-process deliveries per round trip, where the direct echo has none), and through a
    # blocking thread-per-direction relay: no event loop at all in the relay process
    echo_port = echo_server.sockets[0].getsockname()[1]
    echo_process = RelayProcess(run_echo, 0, files, client_ctx)
    async with echo_process as (send, recv):
        apart = await echo_percentiles(send, recv, shape["round_trips"])
        sdk_qs = new_quickstart(admin, folder / "sdk", "bench-sdk", **urls)
        figures.update(await asyncio.to_thread(real_sdk_figures, admin, sdk_qs, echo_process.port, shape))
    async with RelayProcess(run_relay, echo_port, files, client_ctx) as (send, recv):
        relayed = await echo_percentiles(send, recv, shape["round_trips"])
    async with RelayProcess(run_thread_relay, echo_port, files, client_ctx) as (send, recv):
        threaded = await echo_percentiles(send, recv, shape["round_trips"])
    await conn.close()
    figures.update(
        {
            "echo p50 via router (ms)": routed[0],
            "echo p50 direct TLS, echo in its own process (ms)": apart[0],
            "echo p50 ratio router / direct (target 3)": routed[0] / apart[0],
            "echo p99 via router (ms)": routed[1],
            "echo p99 direct TLS, echo in its own process (ms)": apart[1],
            "echo p99 ratio router / direct (target 3)": routed[1] / apart[1],
            "echo p50 via router, end-to-end encrypted (ms)": sealed[0],
            "echo p99 via router, end-to-end encrypted (ms)": sealed[1],
            "echo p50 ratio end-to-end encrypted / direct": sealed[0] / apart[0],
            "echo p50 direct TLS, both ends in this loop (ms)": direct[0],
            "echo p99 direct TLS, both ends in this loop (ms)": direct[1],
            "echo p50 ratio router / one-loop echo": routed[0] / direct[0],
            "echo p99 ratio router / one-loop echo": routed[1] / direct[1],
            "echo p50 via a bare TLS relay process (ms)": relayed[0],
            "echo p99 via a bare TLS relay process (ms)": relayed[1],
            "echo p50 ratio router / bare relay": routed[0] / relayed[0],
            "echo p99 ratio router / bare relay": routed[1] / relayed[1],
            "echo p50 via a thread relay process (ms)": threaded[0],
            "echo p50 ratio thread relay / direct (any relay's floor)": threaded[0] / apart[0],
        }
    )

    # the router's own share: the same echo with two minimal frame-speaking ends (no e2ee, no SDK queues)
    raw = percentiles(await raw_round_trips(raw_qs, ports["router"], folder, shape["round_trips"]))
    figures.update(
        {
            "echo p50 via router, raw frames (ms)": raw[0],
            "echo p99 via router, raw frames (ms)": raw[1],
            "echo p50 ratio raw frames / bare relay": raw[0] / relayed[0],
        }
    )

    # bulk
    conn = await bulk_guest.dial("bench-bulk")
    routed_mb = await bulk(conn.send, conn.recv_exactly, shape["bulk"])
    sink_server = await asyncio.start_server(make_sink(shape["bulk"]), "127.0.0.1", 0, ssl=server_ctx, limit=LIMIT)
    async with RelayProcess(run_relay, sink_server.sockets[0].getsockname()[1], files, client_ctx) as (send, recv):
        relayed_mb = await bulk(send, recv, shape["bulk"])
    figures.update(
        {
            "bulk MB/s via router": routed_mb,
            "bulk MB/s bare TLS relay": relayed_mb,
            "bulk ratio": routed_mb / relayed_mb,
        }
    )

    # dials
    started = time.perf_counter()
    for _ in range(shape["dials"]):
        await (await echo_guest.dial("bench-echo")).close()
    dials = shape["dials"] / (time.perf_counter() - started)
    started = time.perf_counter()
    for _ in range(shape["dials"]):
        _, writer = await asyncio.open_connection("127.0.0.1", echo_server.sockets[0].getsockname()[1], ssl=client_ctx)
        writer.close()
    connects = shape["dials"] / (time.perf_counter() - started)
    figures.update({"dials/s via router": dials, "TLS connects/s direct": connects, "dials ratio": dials / connects})

    # memory held
    baseline = rss_mib(pid)
    client, identity = load_identity_file(echo_qs.dialer)
    context = ssl.create_default_context(cadata=identity.ca_pem)
    context.load_cert_chain(*identity.cert_key().write(folder, "idle"))
    idle = await hold_channels(("127.0.0.1", ports["router"]), context, client.token, shape["idle"])
    active = [await echo_guest.dial("bench-echo") for _ in range(shape["active"])]
    await asyncio.gather(*(c.send(b"ping") for c in active))
    await asyncio.gather(*(c.recv_exactly(4) for c in active))
    held = rss_mib(pid)
    circuits = [await echo_guest.dial("bench-echo") for _ in range(shape["circuits"])]
    with_circuits = rss_mib(pid)
    for writer in idle:
        writer.close()
    for conn in active + circuits:
        await conn.close()
    for plane in planes:
        await plane.close()
    figures.update(
        {
            "process RSS idle router (MiB)": baseline,
            f"process RSS {shape['idle']} idle + {shape['active']} active (MiB)": held,
            "KiB per held connection": (held - baseline) * 1024 / (shape["idle"] + shape["active"]),
            f"process RSS with {shape['circuits']} circuits (MiB)": with_circuits,
            "KiB per circuit (on top of those)": (with_circuits - held) * 1024 / shape["circuits"],
        }
    )
    return figures


# -- two routers and a link -------------------------------------------------------------------
def serve_network() -> None:
    """``--serve-network``: a controller and routers a and b (in-process, linked); print the URLs, run until stdin closes."""
    from controller.app import router_link
    from harness.processes.server import LocalController
    from router import EdgeRouter

    with LocalController() as local:
        with ZitiClient.connect(local.url) as admin:
            admin.login("admin", "admin")
            admin.management.create_service_edge_router_policy(
                body={"name": "all", "semantic": "AnyOf", "serviceRoles": ["#all"], "edgeRouterRoles": ["#all"]}
            )
            for name in ("a", "b"):
                admin.management.create_edge_router(body={"name": f"bench-{name}", "roleAttributes": [name]})
        loop, _ = loop_on_thread("routers")  # both routers in one loop, as a router process runs its edge and control
        routers = [
            EdgeRouter(router_link(local.controller, name=f"bench-{n}"), "127.0.0.1", 0, loop=loop).start()
            for n in "ab"
        ]
        deadline = time.monotonic() + 30
        while not local.controller.routing.fabric.links() and time.monotonic() < deadline:
            time.sleep(0.05)  # a real process: poll its link with a bounded deadline
        print(json.dumps({"url": local.url, "https": local.https_url, "routers": [r.url for r in routers]}), flush=True)
        sys.stdin.read()
        for router in routers:
            router.stop()


async def network_scenario(folder: Path, shape: dict) -> dict:
    process = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.router", "--serve-network"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        info = json.loads(process.stdout.readline())
        return await _over_links(info, folder, shape, process.pid)
    finally:
        process.stdin.close()
        process.wait(30)


def host_near_far(admin, folder: Path, prefix: str) -> dict[str, Path]:
    """Three enrolled identities: ``host`` binds and ``near`` dials through routers with role ``a``, ``far`` dials
    through role ``b`` (across the link); each its own policies, named ``PREFIX-WHO``. Their identity files."""
    files = {}
    for who, kind, router in (("host", "Bind", "a"), ("near", "Dial", "a"), ("far", "Dial", "b")):
        name = f"{prefix}-{who}"
        admin.management.create_service_policy(
            body={
                "name": name,
                "type": kind,
                "semantic": "AnyOf",
                "identityRoles": [f"#{name}"],
                "serviceRoles": ["#all"],
            }
        )
        admin.management.create_edge_router_policy(
            body={"name": name, "semantic": "AnyOf", "identityRoles": [f"#{name}"], "edgeRouterRoles": [f"#{router}"]}
        )
        files[who] = enroll_identity(admin, name, [name], folder / f"{name}.json")
    return files


async def _over_links(info: dict, folder: Path, shape: dict, pid: int) -> dict:
    admin = ZitiClient.connect(info["url"])
    admin.login("admin", "admin")
    folder.mkdir(parents=True, exist_ok=True)
    for service, encrypted in (("net-echo", True), ("net-bulk", False)):
        admin.management.create_service(
            body={"name": service, "encryptionRequired": encrypted, "roleAttributes": [service]}
        )
    files = host_near_far(admin, folder, "net")
    host, near, far = (DataPlane(*load_identity_file(files[who])) for who in ("host", "near", "far"))

    async def echo(conn):
        while data := await conn.recv():
            await conn.send(data)

    async def sink(conn):
        seen = 0
        while seen < shape["bulk"] and (data := await conn.recv()):
            seen += len(data)
        await conn.send(b"done")

    await host.bind("net-echo", echo)
    await host.bind("net-bulk", sink)
    figures = {}
    for label, guest in (("one hop", near), ("two hops", far)):
        conn = await guest.dial("net-echo")
        p50, p99 = await echo_percentiles(conn.send, conn.recv_exactly, shape["round_trips"])
        await conn.close()
        conn = await guest.dial("net-bulk")
        mb = await bulk(conn.send, conn.recv_exactly, shape["bulk"])
        await conn.close()
        figures[label] = [p50, p99, mb]
    dials = await alternate_dials(near, far, "net-echo", shape["network_dials"])
    figures["one hop"].append(dials["one hop"])
    figures["two hops"].append(dials["across"])
    for plane in (host, near, far):
        await plane.close()
    admin.close()
    one, two = figures["one hop"], figures["two hops"]
    return {
        "echo p50 one hop, 2-router net (ms)": one[0],
        "echo p50 two hops over a link (ms)": two[0],
        "echo p99 one hop, 2-router net (ms)": one[1],
        "echo p99 two hops over a link (ms)": two[1],
        "bulk MB/s one hop, 2-router net": one[2],
        "bulk MB/s two hops over a link": two[2],
        "dials/s one hop, in-process routers": one[3],
        "dials/s across a link, in-process routers": two[3],
    }


async def alternate_dials(near, far, service: str, dials: int, rounds: int = 3) -> dict[str, float]:
    """Dials per second one hop (``near``'s router hosts the service) and across a link (``far``), each dial a
    Connect until StateConnected, then a close: ``rounds`` runs of ``dials`` each, the median run, after a warm-up.
    The two take turns dial by dial (who goes first alternating), so both see the same machine: a busy second on a
    shared machine lands on both, and neither follows only its own or only the other's closes."""
    runs: dict[str, list[float]] = {"one hop": [], "across": []}
    for guest in (near, far):  # warm: sessions, channels, the terminator known on both routers
        for _ in range(WARM_UP):
            await (await guest.dial(service)).close()
    for _ in range(rounds):
        spent = {"one hop": 0.0, "across": 0.0}
        for turn in range(dials):
            for label, guest in (("one hop", near), ("across", far))[:: 1 if turn % 2 else -1]:
                started = time.perf_counter()
                await (await guest.dial(service)).close()
                spent[label] += time.perf_counter() - started
        for label, seconds in spent.items():
            runs[label].append(dials / seconds)
    return {label: statistics.median(rates) for label, rates in runs.items()}


# -- dials through process routers ---------------------------------------------------------------------
def process_dials(folder: Path, shape: dict, rounds: int = 3) -> dict:
    """Dials per second as deployed: ``python -m controller`` and routers a and b (linked) each their own process,
    the host bound on a; a dialer on a (one hop) and one on b (across the link), ``rounds`` runs of
    ``shape["network_dials"]`` each (:func:`alternate_dials`)."""
    return asyncio.run(_process_dials(folder, shape, rounds))


async def _process_dials(folder: Path, shape: dict, rounds: int) -> dict:
    from harness.processes.routers import RouterNetwork

    process, ports = start_controller(folder / "ctrl", router=False)
    admin = ZitiClient.connect(f"http://127.0.0.1:{ports['http']}")
    admin.login("admin", "admin")
    network = RouterNetwork(admin, folder / "routers")
    network.add("bench-a", roles=["a"])
    network.add("bench-b", roles=["b"], links=["bench-a"])
    planes = []
    try:
        network.start()
        admin.management.create_service_edge_router_policy(
            body={"name": "all", "semantic": "AnyOf", "serviceRoles": ["#all"], "edgeRouterRoles": ["#all"]}
        )
        admin.management.create_service(body={"name": "proc-echo", "encryptionRequired": True, "roleAttributes": []})
        files = host_near_far(admin, folder, "proc")
        planes = [DataPlane(*load_identity_file(files[who])) for who in ("host", "near", "far")]
        host, near, far = planes

        async def echo(conn):
            while data := await conn.recv():
                await conn.send(data)

        await host.bind("proc-echo", echo)
        dials = await alternate_dials(near, far, "proc-echo", shape["network_dials"], rounds)
    finally:
        for plane in planes:
            await plane.close()
        network.stop_routers()
        admin.close()
        process.terminate()
        process.wait(30)
    one, across = dials["one hop"], dials["across"]
    return {
        "dials/s one hop, process routers": one,
        "dials/s across a link, process routers": across,
        "dials ratio across a link / one hop, process routers": across / one,
    }


# -- the control plane: a controller restart under process routers, a flood on the control port ----------------
def restart_to_dial(folder: Path, attempts: int = 3) -> dict:
    """Process routers a and b linked, a binder on a, a dialer on b with its channel open: the controller restarts
    (``LocalController.restart``, on its data and ports); ms from its return to the dialer's first successful
    dial across the link on the same channel (the median of ``attempts`` restarts)."""
    from harness.dataplane import DialError
    from harness.dataplane.sync import SyncDataPlane, echo
    from harness.processes.routers import RouterNetwork
    from harness.processes.server import LocalController

    local = LocalController(data_dir=folder / "ctrl", ctrl=True).start()
    admin = ZitiClient.connect(local.url)
    admin.login("admin", local.config.admin_password)
    network = RouterNetwork(admin, folder / "routers")
    network.add("bench-a", roles=["bench-a"])
    network.add("bench-b", roles=["bench-b"], links=["bench-a"])
    samples = []
    try:
        network.start()
        qs = new_quickstart(admin, folder / "ids", "restart", controller_url=local.https_url, router_url="")
        for who, router in (("binder", "bench-a"), ("dialer", "bench-b")):
            admin.management.create_edge_router_policy(
                body={
                    "name": f"restart-{who}",
                    "semantic": "AnyOf",
                    "identityRoles": [f"#restart-{who}"],
                    "edgeRouterRoles": [f"#{router}"],
                }
            )
        admin.management.create_service_edge_router_policy(
            body={"name": "restart", "semantic": "AnyOf", "serviceRoles": ["#restart"], "edgeRouterRoles": ["#all"]}
        )
        with SyncDataPlane.from_identity_file(qs.binder) as host, SyncDataPlane.from_identity_file(qs.dialer) as guest:
            host.bind(qs.service, echo)
            guest.dial(qs.service).close()
            guest.timeout = 5.0
            for _ in range(attempts):
                local.restart()
                back = time.perf_counter()
                deadline = back + 30
                while time.perf_counter() < deadline:
                    try:
                        guest.dial(qs.service).close()
                        samples.append((time.perf_counter() - back) * 1000)
                        break
                    except (DialError, OSError):
                        time.sleep(0.01)  # a real process restarting: poll the dial, bounded above
                else:
                    samples.append(float("inf"))
                admin = network.admin = ZitiClient.connect(local.url)
                admin.login("admin", local.config.admin_password)
                for router in network:
                    router.admin = admin
    finally:
        network.stop_routers()
        network.admin.close()
        local.stop()
    return {"controller restart to first dial across a link (ms, median)": statistics.median(samples)}


def ctrl_flood(folder: Path, count: int = 3000, sources: int = 10) -> dict:
    """``python -m controller`` with its control port; RSS idle, with ``count`` idle TCP connections on the control
    port (from ``sources`` loopback addresses, under the per-address cap), and a second after they closed."""
    ctrl_port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "controller",
            "--data",
            str(folder),
            "--port",
            str(free_port()),
            "--http-port",
            "0",
            "--no-router",
            "--ctrl-port",
            str(ctrl_port),
            "--log-level",
            "ERROR",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        for line in process.stdout:
            if "Ctrl-C stops it" in line:
                break
        idle = rss_mib(process.pid)
        socks = []
        for index in range(count):
            sock = socket.socket()
            sock.bind((f"127.0.0.{2 + index % sources}", 0))
            sock.connect(("127.0.0.1", ctrl_port))
            socks.append(sock)
        time.sleep(1.0)  # a real process accepting: let it take them all
        held = rss_mib(process.pid)
        for sock in socks:
            sock.close()
        time.sleep(1.0)
        after = rss_mib(process.pid)
    finally:
        process.terminate()
        process.wait(30)
    return {
        "controller RSS idle (MiB)": idle,
        f"controller RSS with {count} idle control connections (MiB)": held,
        "controller RSS after they closed (MiB)": after,
    }


SHAPES = {
    # network_dials: per side and run of alternate_dials (50 took a tenth of a second in-process: a transient)
    "quick": {
        "round_trips": 200,
        "bulk": 8 * 2**20,
        "dials": 50,
        "network_dials": 200,
        "idle": 200,
        "active": 20,
        "circuits": 200,
    },
    "full": {
        "round_trips": 2000,
        "bulk": 64 * 2**20,
        "dials": 300,
        "network_dials": 500,
        "idle": 1000,
        "active": 100,
        "circuits": 1000,
    },
}


def main(quick: bool = False) -> dict:
    shape = SHAPES["quick" if quick else "full"]
    with tempfile.TemporaryDirectory(prefix="bench-router-") as tmp:
        process, ports = start_controller(Path(tmp) / "data")
        try:
            figures = asyncio.run(scenario(ports, Path(tmp), process.pid, shape))
        finally:
            process.terminate()
            process.wait(30)
        linked = asyncio.run(network_scenario(Path(tmp) / "net", shape))
        figures.update(process_dials(Path(tmp) / "proc", shape))
        figures.update(restart_to_dial(Path(tmp) / "restart", attempts=1 if quick else 3))
        figures.update(ctrl_flood(Path(tmp) / "flood"))
    direct = (
        figures["echo p50 direct TLS, echo in its own process (ms)"],
        figures["echo p99 direct TLS, echo in its own process (ms)"],
    )
    figures.update(linked)
    figures.update(
        {
            "echo p50 ratio two hops / direct": linked["echo p50 two hops over a link (ms)"] / direct[0],
            "echo p99 ratio two hops / direct": linked["echo p99 two hops over a link (ms)"] / direct[1],
            "echo p50 ratio two hops / one hop": linked["echo p50 two hops over a link (ms)"]
            / linked["echo p50 one hop, 2-router net (ms)"],
            "bulk ratio two hops / bare TLS relay": linked["bulk MB/s two hops over a link"]
            / figures["bulk MB/s bare TLS relay"],
            "dials ratio across a link / one hop, in-process routers": linked[
                "dials/s across a link, in-process routers"
            ]
            / linked["dials/s one hop, in-process routers"],
        }
    )
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.router")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--serve-network", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_network:
        serve_network()
    else:
        for key, value in main(args.quick).items():
            print(f"  {key:<48} {value:,.3f}" if isinstance(value, float) else f"  {key:<48} {value}")
