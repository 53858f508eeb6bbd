"""Slow clients against a live controller, from another process, and a probe's latency meanwhile.

``hold(targets, connections=200, seconds=30, probes=...)`` runs
``python -m benchmarks.slow PLAN``: for each ``(host, port)`` target it keeps
``connections`` sockets open for ``seconds`` (half silent, half trickling one
byte a second; a socket the server closes is opened again, as an attacker
would), while a probe opens a fresh connection to each probe URL in turn and
times one ``GET`` on it. Returns each probe URL's p50/p99/max (ms) and failures.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from urllib.parse import urlsplit

from benchmarks.load import _ROOT

TRICKLE = {"http": (b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ", b"a"), "https": (b"\x16\x03\x01\x02\x00\x01", b"\x00")}


def hold(
    targets: list[tuple[str, int, str]],
    probes: list[str],
    *,
    connections: int = 200,
    seconds: float = 30,
    ca: str | None = None,
    probe_source: str | None = None,
    settle: bool = False,
) -> dict:
    """Hold slow connections to every ``(host, port, scheme)`` target; return probe figures per URL.

    ``probe_source`` binds the probes to another loopback address (``127.0.0.2``), so the slow
    connections (from 127.0.0.1) are one flooding address and the probes another client. ``settle``
    starts the probes (and the ``seconds``) once every slow connection was opened the first time, so
    the figure is the steady state of a flood rather than its first burst of connects.
    """
    plan = {"targets": targets, "probes": probes, "connections": connections, "seconds": seconds, "ca": ca}
    plan["probe_source"], plan["settle"] = probe_source, settle
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(plan, handle)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.slow", handle.name],
            capture_output=True,
            text=True,
            timeout=seconds + 120,
            cwd=_ROOT,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([_ROOT, os.environ.get("PYTHONPATH", "")])},
        )
    finally:
        os.unlink(handle.name)
    if done.returncode != 0:
        raise RuntimeError(f"slow-client run failed: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout)


class _Slow:
    """One slow connection, reopened whenever the server closes it."""

    def __init__(self, host: str, port: int, scheme: str, trickles: bool):
        self.address, self.scheme, self.trickles = (host, port), scheme, trickles
        self.sock: socket.socket | None = None
        self.reopened = -1

    def tick(self) -> None:
        try:
            if self.sock is None:
                self.sock = socket.create_connection(self.address, timeout=2)
                self.sock.setblocking(False)
                self.reopened += 1
                if self.trickles:
                    self.sock.send(TRICKLE[self.scheme][0])
            elif self.trickles:
                self.sock.send(TRICKLE[self.scheme][1])
            else:
                if self.sock.recv(1) == b"":
                    raise ConnectionResetError
        except BlockingIOError:
            pass
        except OSError:
            if self.sock is not None:
                self.sock.close()
            self.sock = None


def _probe(url: str, ca: str | None, source: str | None = None) -> float:
    parts = urlsplit(url)
    bind = (source, 0) if source else None
    started = time.perf_counter()
    if parts.scheme == "https":
        ctx = ssl.create_default_context(cafile=ca)
        ctx.check_hostname = False
        conn = http.client.HTTPSConnection(parts.hostname, parts.port, context=ctx, timeout=5, source_address=bind)
    else:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=5, source_address=bind)
    try:
        conn.request("GET", parts.path or "/")
        response = conn.getresponse()
        response.read()
        if response.status >= 400:
            raise OSError(f"status {response.status}")
    finally:
        conn.close()
    return (time.perf_counter() - started) * 1000


def _run(plan: dict) -> dict:
    slow = [
        _Slow(host, port, scheme, trickles=bool(n % 2))
        for host, port, scheme in plan["targets"]
        for n in range(plan["connections"])
    ]
    stop, opened = threading.Event(), threading.Event()

    def keep_slow() -> None:
        while not stop.is_set():
            for conn in slow:
                conn.tick()
            opened.set()
            stop.wait(1)

    holder = threading.Thread(target=keep_slow, daemon=True)
    holder.start()
    if plan.get("settle"):
        opened.wait(60)  # bounded: the first pass over every slow connection
    samples: dict[str, list[float]] = {url: [] for url in plan["probes"]}
    failures = dict.fromkeys(plan["probes"], 0)
    deadline = time.monotonic() + plan["seconds"]
    while time.monotonic() < deadline:
        for url in plan["probes"]:
            try:
                samples[url].append(_probe(url, plan["ca"], plan.get("probe_source")))
            except (OSError, http.client.HTTPException):
                failures[url] += 1
        time.sleep(0.05)  # a probe every 50 ms per URL: a client, not a load test
    stop.set()
    holder.join()
    return {
        url: _summary(sorted(values), failures[url], sum(c.reopened for c in slow)) for url, values in samples.items()
    }


def _summary(values: list[float], failures: int, reopened: int) -> dict:
    def pct(q: float) -> float:
        return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")

    return {
        "probes": len(values),
        "failures": failures,
        "p50_ms": pct(0.5),
        "p99_ms": pct(0.99),
        "max_ms": values[-1] if values else float("nan"),
        "slow_reopened": reopened,
    }


if __name__ == "__main__":
    with open(sys.argv[1]) as plan_file:
        print(json.dumps(_run(json.load(plan_file))))
