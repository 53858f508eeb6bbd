"""Over-the-socket figures: the controller served as in production, loaded from another process.

Run: ``python -m benchmarks --only serving``. A ``LocalController`` (durable
store: every acknowledged write is fsynced) serves HTTPS and HTTP; the load comes
from ``benchmarks.load`` child processes (and ``wrk`` when installed), never from
this process. Each figure sits beside its anchors from the same run: a bare hello
app on the same server at the same connection count (the server's ceiling), and
``wrk`` against the same hello (the ``benchmarks.load`` driver's own ceiling). The
slow-client figure holds 200 slow connections per port while a probe is timed; the flood figure
has 127.0.0.1 hold 1,000 per port (past the per-address cap) while probes come from 127.0.0.2.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cryptography import x509

from benchmarks.load import _ROOT, Request, TLSFiles, drive, wrk_rate, wrk_writes
from benchmarks.slow import hold
from controller.heap import freeze_started_heap
from controller.server.serve import ThreadedServer
from harness.client import ZitiClient
from harness.client import pki as hp
from harness.client.enroll import ott_csr
from harness.client.transport import inprocess
from harness.processes.server import LocalController

LEVELS = (1, 8)
JSON = {"content-type": "application/json"}
CREATE_BODY = '{"name":"bench-create-{seq}","type":"Device","isAdmin":false}'
#: what the durable-creates lines measure, printed above them
CREATES = "POST /identities (a Device, no attributes), 201 only after its journal line is fsynced"


def hello_app(environ, start_response):
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", "17")])
    return [b'{"hello":"world"}']


def anchors(seconds: float, level: int) -> dict:
    """The bare hello app on the same server: ``benchmarks.load`` driver and ``wrk`` at one level."""
    with ThreadedServer(hello_app, threads=8) as hello:
        return {
            f"hello x{level}": drive(hello.url, Request("GET", "/"), connections=level, seconds=seconds).rate,
            f"hello wrk x{level}": wrk_rate(hello.url + "/", connections=level, seconds=seconds),
        }


def granian_reference(seconds: float) -> dict:
    """``wrk`` against the same hello on granian (Rust), when installed: the ceiling we chose not to use.

    Not used by the controller: on a GIL build granian serves from worker processes
    (the controller is one process: one store, one policy engine) or, threaded,
    only from the main thread with its own signal handling; and its TLS cannot hand
    the unverified client chain to the app.
    """
    if importlib.util.find_spec("granian") is None or shutil.which("wrk") is None:
        return {}
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "granian",
            "--interface",
            "wsgi",
            "--port",
            str(port),
            "--workers",
            "1",
            "benchmarks.serving:hello_app",
        ],
        cwd=_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        if not _wait_for_port(port, 15):
            return {}
        return {
            f"granian hello wrk x{level}": wrk_rate(f"http://127.0.0.1:{port}/", connections=level, seconds=seconds)
            for level in LEVELS
        }
    finally:
        server.terminate()
        server.wait(10)


def _wait_for_port(port: int, limit: float) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.1)  # a child server starting up
    return False


class Rig:
    """A durable controller, an admin session and the PEM files the load generator needs."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.ctl = LocalController(data_dir=folder / "data").start()
        self.admin = ZitiClient(inprocess(self.ctl.app)).signed_in("admin", "admin")
        self.ca = folder / "ca.pem"
        self.ca.write_text(self.ctl.controller.pki.ca_bundle_pem())
        self.counter = 0
        freeze_started_heap()  # as ``controller.server.serve.run`` does once the app is built

    def tokens(self, count: int) -> list[tuple[str, str]]:
        """``count`` new identities with an ott enrollment: (id, token)."""
        out = []
        for _ in range(count):
            self.counter += 1
            identity_id = self.admin.create(
                "identities",
                {"name": f"bench-{self.counter:06d}", "type": "Device", "isAdmin": False, "enrollment": {"ott": True}},
            )
            out.append(
                (identity_id, self.admin.mgmt_ok("GET", f"/identities/{identity_id}")["enrollment"]["ott"]["token"])
            )
        return out

    def enrollments(self, count: int) -> list[Request]:
        return [
            Request(
                "POST",
                f"/edge/client/v1/enroll?method=ott&token={token}",
                ott_csr(identity_id, self.ctl.https_url)[0],
                {"content-type": "text/plain"},
            )
            for identity_id, token in self.tokens(count)
        ]

    def client_cert(self) -> TLSFiles:
        """Enroll one identity and write its certificate and key for the driver."""
        ((identity_id, token),) = self.tokens(1)
        csr_pem, key = ott_csr(identity_id, self.ctl.https_url)
        data = ZitiClient(self.admin.raw).edge_ok(
            "POST",
            "/enroll",
            params={"method": "ott", "token": token},
            content=csr_pem,
            headers={"content-type": "text/plain"},
        )
        chain = x509.load_pem_x509_certificates(data["cert"].encode())
        cert, key_file = hp.CertKey(chain[0], key, chain[1:]).write(self.folder, "login")
        return TLSFiles(str(self.ca), str(cert), str(key_file))

    def create(self) -> Request:
        """One identity create, ``{seq}`` making each name unique (see ``benchmarks.load``)."""
        return Request("POST", "/edge/management/v1/identities", CREATE_BODY, {**JSON, "zt-session": self.admin.token})

    def close(self) -> None:
        self.ctl.stop()


def controller_figures(rig: Rig, seconds: float, batch: int) -> dict:
    ctl, figures = rig.ctl, {}
    tls = TLSFiles(str(rig.ca))
    cert = rig.client_cert()
    cert_login = Request("POST", "/edge/client/v1/authenticate?method=cert", "{}", JSON)
    password_login = Request(
        "POST", "/edge/client/v1/authenticate?method=password", '{"username":"admin","password":"admin"}', JSON
    )
    for level in LEVELS:  # each level right after its anchor, so both see the same machine
        figures.update(anchors(seconds, level))
        figures[f"GET /version x{level}"] = drive(
            ctl.url, Request("GET", "/edge/client/v1/version"), connections=level, seconds=seconds
        ).rate
        figures[f"GET /version wrk x{level}"] = wrk_rate(
            ctl.url + "/edge/client/v1/version", connections=level, seconds=seconds
        )
        figures[f"cert logins x{level}"] = _served(
            drive, ctl.https_url, cert_login, connections=level, seconds=seconds, tls=cert
        )
        figures[f"password logins x{level}"] = _served(
            drive, ctl.https_url, password_login, connections=level, seconds=seconds, tls=tls
        )
        plan = rig.enrollments(batch)
        figures[f"enrollments x{level}"] = _served(drive, ctl.https_url, plan, connections=level, once=True, tls=tls)
        figures[f"fsync x{level}"] = fsync_ms(rig.folder)
        fsyncs = ctl.controller.store.fsyncs
        figures[f"durable creates x{level}"] = _served(durable_creates, rig, level, seconds)
        figures[f"creates per fsync x{level}"] = figures[f"durable creates x{level}"][3] / max(
            1, ctl.controller.store.fsyncs - fsyncs
        )
    return figures


def fsync_ms(folder: Path, count: int = 100) -> float:
    """Median time (ms) to append a journal-sized line and fsync it, on the data folder's disk, now.

    Every durable create waits for at least one; with 8 connections one fsync covers at most 8 creates.
    """
    path = folder / "fsync-probe"
    times = []
    with open(path, "ab", buffering=0) as handle:
        for _ in range(count):
            handle.write(b"x" * 400 + b"\n")
            started = time.perf_counter()
            os.fsync(handle.fileno())
            times.append(time.perf_counter() - started)
    path.unlink()
    return sorted(times)[count // 2] * 1000


def durable_creates(rig: Rig, level: int, seconds: float) -> tuple:
    """Timed identity creates at one level, through ``wrk`` when installed (else the ``benchmarks.load`` driver)."""
    result = wrk_writes(rig.ctl.url, rig.create(), connections=level, seconds=seconds)
    if result is not None:
        return result, "wrk"
    return drive(rig.ctl.url, rig.create(), connections=level, seconds=seconds), "load.py"


def _served(run, *args, **kwargs) -> tuple[float, float, str, int]:
    """(rate, server CPU ms per request, driver, requests) of ``run(...)``; the server runs in this process."""
    before = os.times()
    outcome = run(*args, **kwargs)
    after = os.times()
    result, driver = outcome if isinstance(outcome, tuple) else (outcome, "load.py")
    _rate(result)
    busy = (after.user - before.user) + (after.system - before.system)
    return result.rate, busy * 1000 / max(1, result.requests), driver, result.requests


def _rate(result) -> float:
    if result.errors:
        raise RuntimeError(f"{result.errors} failed requests, first: {result.first_error}")
    return result.rate


def slow_client_figures(rig: Rig, seconds: float) -> dict:
    """Probe latency with no slow clients (the anchor), then with 200 slow connections per port."""
    ctl = rig.ctl
    version = "/edge/client/v1/version"
    targets = [(ctl.host, ctl.https_port, "https"), (ctl.host, ctl.http_port, "http")]
    probes = {"HTTPS": ctl.https_url + version, "HTTP": ctl.url + version}
    figures = {}
    for slow in (0, 200):
        result = hold(targets, list(probes.values()), connections=slow, seconds=seconds if slow else 2, ca=str(rig.ca))
        for scheme, url in probes.items():
            row = result[url]
            label = f"{slow} slow conns per port held {seconds:g} s" if slow else "no slow conns"
            figures[f"{scheme} probe p50 / p99 / max (ms), {label}"] = (
                f"{row['p50_ms']:.1f} / {row['p99_ms']:.1f} / {row['max_ms']:.1f} "
                f"({row['probes']} probes, {row['failures']} failed)"
            )
    return figures


#: idle connections one address (127.0.0.1) holds per port: past the per-address cap (``Limits.max_per_peer``)
FLOOD = 1000


def flood_figures(rig: Rig, seconds: float) -> dict:
    """Probe latency from 127.0.0.2 while 127.0.0.1 holds ``FLOOD`` slow connections per port (fair connections)."""
    ctl = rig.ctl
    version = "/edge/client/v1/version"
    targets = [(ctl.host, ctl.https_port, "https"), (ctl.host, ctl.http_port, "http")]
    probes = {"HTTPS": ctl.https_url + version, "HTTP": ctl.url + version}
    figures = {}
    for flood in (0, FLOOD):
        result = hold(
            targets,
            list(probes.values()),
            connections=flood,
            seconds=seconds if flood else 2,
            ca=str(rig.ca),
            probe_source="127.0.0.2",
            settle=True,
        )
        for scheme, url in probes.items():
            row = result[url]
            label = f"127.0.0.1 floods {flood} conns per port for {seconds:g} s" if flood else "no flood (anchor)"
            figures[f"{scheme} probe from 127.0.0.2 p50 / p99 / max (ms), {label}"] = (
                f"{row['p50_ms']:.1f} / {row['p99_ms']:.1f} / {row['max_ms']:.1f} "
                f"({row['probes']} probes, {row['failures']} failed{'; target p99 < 100' if flood else ''})"
            )
    return figures


def main(quick: bool = False) -> dict:
    seconds, batch, hold_seconds = (2.0, 150, 5.0) if quick else (4.0, 600, 30.0)
    with tempfile.TemporaryDirectory() as folder:
        rig = Rig(Path(folder))
        try:
            measured = controller_figures(rig, seconds, batch)
            slow = slow_client_figures(rig, hold_seconds)
            slow |= flood_figures(rig, max(5.0, hold_seconds / 2))
        finally:
            rig.close()
    return _table(measured | granian_reference(seconds)) | slow


def _table(measured: dict) -> dict:
    """Each figure with its ratio to the bare hello on the same server at the same level, same driver."""
    figures = {}
    for level in LEVELS:
        hello = {"load.py": measured[f"hello x{level}"], "wrk": measured[f"hello wrk x{level}"]}
        figures[f"bare hello x{level} conns, load.py driver (req/s)"] = hello["load.py"]
        if hello["wrk"]:
            figures[f"bare hello x{level} conns, wrk (req/s)"] = hello["wrk"]
        if measured.get(f"granian hello wrk x{level}"):
            figures[f"granian hello x{level} conns, wrk (req/s; reference)"] = measured[f"granian hello wrk x{level}"]
        rate = measured[f"GET /version x{level}"]
        figures[f"GET /version x{level} conns (/s; ratio to hello)"] = f"{rate:,.0f}  ({rate / hello['load.py']:.2f})"
        wrk = measured[f"GET /version wrk x{level}"]
        if wrk and hello["wrk"]:
            figures[f"GET /version x{level} conns, wrk (/s; ratio to hello)"] = (
                f"{wrk:,.0f}  ({wrk / hello['wrk']:.2f})"
            )
        for name in ("cert logins", "password logins", "enrollments", "durable creates"):
            if name == "durable creates":
                figures[f"fsync alone, same disk, just before x{level} (ms p50)"] = measured[f"fsync x{level}"]
            rate, cpu_ms, driver, _count = measured[f"{name} x{level}"]
            figures[f"{name} x{level} conns, {driver} (/s; ratio to hello)"] = (
                f"{rate:,.0f}  ({rate / hello[driver]:.3f}; server CPU {cpu_ms:.2f} ms each)"
            )
        figures[f"  creates per journal fsync x{level} (group commit)"] = measured[f"creates per fsync x{level}"]
    return {"durable creates": CREATES} | figures
