"""Drive N keep-alive connections against a URL from *another process*.

The figures of a server are only honest when the load does not share its
process (and GIL). ``drive`` writes a plan to a temporary file, runs
``python -m benchmarks.load PLAN`` and reads the result back::

    from benchmarks.load import Request, drive

    result = drive("http://127.0.0.1:8080", Request("GET", "/version"), connections=8, seconds=3)
    result.rate, result.p50_ms, result.p99_ms

Each connection is one thread with its own keep-alive socket (TLS with an
optional client certificate for ``https://`` URLs) sending ready-made request
bytes: a lean client, since it shares the machine's cores with the server. ``requests`` is one
request repeated until ``seconds`` pass (``{seq}`` in its body made unique each
time, for creates that need unique names), or, with ``once=True``, a list whose
every request is sent exactly once, shared among the connections (for
operations that consume a token, such as enrollments). ``wrk_rate`` runs ``wrk``
(when installed) for a plain GET, the client-side ceiling to compare against;
``wrk_writes`` runs it for one request whose body names ``{seq}``, replaced by a
number unique to each request (creates that need unique names, for a timed run).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from urllib.parse import urlsplit

#: the project folder: the child process imports this very copy of ``benchmarks.load``
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class Request:
    method: str
    path: str
    body: str = ""
    headers: dict = field(default_factory=dict)


@dataclass
class TLSFiles:
    """PEM files for an ``https://`` URL: the CAs to trust, and an optional client certificate."""

    ca: str
    cert: str | None = None
    key: str | None = None


@dataclass
class Result:
    requests: int
    errors: int
    seconds: float
    p50_ms: float
    p99_ms: float
    first_error: str = ""

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


def drive(
    url: str,
    requests: Request | list[Request],
    *,
    connections: int = 1,
    seconds: float = 3.0,
    once: bool = False,
    tls: TLSFiles | None = None,
    timeout: float = 60,
) -> Result:
    """Run the load in a child process and return what it measured."""
    plan = {
        "url": url,
        "requests": [asdict(r) for r in (requests if isinstance(requests, list) else [requests])],
        "connections": connections,
        "seconds": seconds,
        "once": once,
        "tls": asdict(tls) if tls else None,
        "run": uuid.uuid4().hex[:8],
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(plan, handle)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.load", handle.name],
            capture_output=True,
            text=True,
            timeout=seconds + timeout,
            cwd=_ROOT,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([_ROOT, os.environ.get("PYTHONPATH", "")])},
        )
    finally:
        os.unlink(handle.name)
    if done.returncode != 0:
        raise RuntimeError(f"load generator failed: {done.stderr.strip()[-500:]}")
    return Result(**json.loads(done.stdout))


def wrk_rate(url: str, *, connections: int = 1, seconds: float = 3.0) -> float | None:
    """GET requests per second that ``wrk`` sustains against ``url`` (None when not installed)."""
    if shutil.which("wrk") is None:
        return None
    done = subprocess.run(
        ["wrk", "-t", str(min(connections, 2)), "-c", str(connections), "-d", f"{seconds:g}s", url],
        capture_output=True,
        text=True,
        timeout=seconds + 30,
    )
    for line in done.stdout.splitlines():
        if line.startswith("Requests/sec:"):
            return float(line.split()[1])
    raise RuntimeError(f"wrk failed: {done.stdout[-300:]} {done.stderr[-300:]}")


def wrk_writes(url: str, request: Request, *, connections: int = 1, seconds: float = 3.0) -> Result | None:
    """Send ``request`` for ``seconds`` through ``wrk``, ``{seq}`` in its body made unique each time.

    None when ``wrk`` is not installed; error responses (non-2xx) are counted in ``errors``.
    ``wrk`` runs whole seconds: ``seconds`` is rounded, to at least one.
    """
    if shutil.which("wrk") is None:
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(_lua_script(request))
    try:
        done = subprocess.run(
            ["wrk", "-t", str(min(connections, 2)), "-c", str(connections), "-d", f"{max(1, round(seconds))}s"]
            + ["--latency"]
            + ["-s", handle.name, url],
            capture_output=True,
            text=True,
            timeout=seconds + 30,
        )
    finally:
        os.unlink(handle.name)
    return _wrk_result(done.stdout, done.stderr)


_LUA = """
local threads = {}
function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end
local counter = 0
function request()
  counter = counter + 1
  return wrk.format(%(method)s, %(path)s, {%(headers)s}, %(head)s .. tid .. "-" .. counter .. %(tail)s)
end
"""


def _lua_script(request: Request) -> str:
    head, _, tail = request.body.partition("{seq}")
    head += uuid.uuid4().hex[:8] + "-"  # unique across runs too: names stay unique on one server
    headers = ", ".join(f"[{_lua(k)}] = {_lua(v)}" for k, v in request.headers.items())
    return _LUA % {
        "method": _lua(request.method),
        "path": _lua(request.path),
        "headers": headers,
        "head": _lua(head),
        "tail": _lua(tail),
    }


def _lua(text: str) -> str:
    """A Lua string literal: every byte that is not plain printable ASCII as a decimal escape."""
    safe = (chr(b) if 32 <= b < 127 and chr(b) not in '"\\' else f"\\{b:03d}" for b in text.encode())
    return '"' + "".join(safe) + '"'


def _wrk_result(stdout: str, stderr: str) -> Result:
    fields = dict(re.findall(r"^\s*(Requests/sec|Non-2xx or 3xx responses|50%|99%):?\s+(\S+)", stdout, re.M))
    total = re.search(r"^\s*(\d+) requests in ([\d.]+)(m?s)", stdout, re.M)
    if total is None or "Requests/sec" not in fields:
        raise RuntimeError(f"wrk failed: {stdout[-300:]} {stderr[-300:]}")
    errors = int(fields.get("Non-2xx or 3xx responses", 0))
    seconds = float(total.group(2)) / (1000 if total.group(3) == "ms" else 1)
    return Result(
        requests=int(total.group(1)) - errors,
        errors=errors,
        seconds=seconds,
        p50_ms=_wrk_ms(fields.get("50%", "0ms")),
        p99_ms=_wrk_ms(fields.get("99%", "0ms")),
        first_error=f"{errors} non-2xx responses" if errors else "",
    )


def _wrk_ms(text: str) -> float:
    """``wrk``'s latency (``812.00us``, ``1.20ms``, ``2.01s``) in milliseconds."""
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[unit]


# -- the child process ---------------------------------------------------------------


class _Conn:
    """One keep-alive HTTP/1.1 connection with as little client work per request as we can.

    ``http.client`` costs the client several times what a small request costs the
    server, and the client shares the machine's cores: the driver sends ready-made
    bytes and reads back only the status line and the framing headers.
    """

    def __init__(self, url: str, tls: dict | None):
        parts = urlsplit(url)
        self.host = f"{parts.hostname}:{parts.port}"
        sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if parts.scheme == "https":
            ctx = ssl.create_default_context(cafile=tls["ca"])
            ctx.check_hostname = False
            if tls.get("cert"):
                ctx.load_cert_chain(tls["cert"], tls["key"])
            sock = ctx.wrap_socket(sock)  # the handshake happens here, before the clock starts
        self.sock = sock
        self.buffer = b""

    def frame(self, request: dict) -> bytes:
        body = request["body"].encode()
        head = [f"{request['method']} {request['path']} HTTP/1.1", f"Host: {self.host}"]
        head += [f"{name}: {value}" for name, value in request["headers"].items()]
        if body or request["method"] in ("POST", "PUT", "PATCH"):
            head.append(f"Content-Length: {len(body)}")
        return ("\r\n".join(head) + "\r\n\r\n").encode() + body

    def exchange(self, data: bytes) -> int:
        """Send one request and read its whole response; returns the status."""
        self.sock.sendall(data)
        head = self._until(b"\r\n\r\n")
        status = int(head[9:12])
        fields = head.lower()
        if b"transfer-encoding: chunked" in fields:
            while (size := int(self._until(b"\r\n").split(b";")[0], 16)) > 0:
                self._exactly(size + 2)
            self._until(b"\r\n")
        else:
            marker = fields.find(b"content-length:")
            length = int(fields[marker + 15 : fields.index(b"\r\n", marker)]) if marker >= 0 else 0
            self._exactly(length)
        return status

    def _until(self, marker: bytes) -> bytes:
        while (end := self.buffer.find(marker)) < 0:
            self._fill()
        found, self.buffer = self.buffer[:end], self.buffer[end + len(marker) :]
        return found

    def _exactly(self, count: int) -> None:
        while len(self.buffer) < count:
            self._fill()
        self.buffer = self.buffer[count:]

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        self.buffer += chunk

    def close(self) -> None:
        self.sock.close()


class _Worker(threading.Thread):
    def __init__(self, plan: dict, work, gate: threading.Barrier):
        super().__init__(daemon=True)
        self.plan, self.work, self.gate = plan, work, gate
        self.samples: list[float] = []
        self.errors: list[str] = []

    def run(self) -> None:
        conn = _Conn(self.plan["url"], self.plan["tls"])  # TCP and TLS handshakes before the clock starts
        framed: dict[int, bytes] = {}  # a repeated request is framed once
        self.gate.wait()
        self.stop_at = time.perf_counter() + (3600 if self.plan["once"] else self.plan["seconds"])
        for request in self.work:
            if time.perf_counter() >= self.stop_at:
                break
            if request.get("unique"):
                data = conn.frame(request)
            elif (data := framed.get(id(request))) is None:  # plan requests live all run: ids stay theirs
                data = framed[id(request)] = conn.frame(request)
            started = time.perf_counter()
            try:
                status = conn.exchange(data)
                if status >= 400:
                    self.errors.append(f"{status} {request['method']} {request['path']}")
            except (OSError, ValueError) as ex:
                self.errors.append(f"{type(ex).__name__}: {ex}")
                conn.close()
                conn = _Conn(self.plan["url"], self.plan["tls"])
            self.samples.append(time.perf_counter() - started)
        conn.close()


def _work_for(plan: dict, slot: int):
    requests = plan["requests"]
    if plan["once"]:
        return requests[slot :: plan["connections"]]
    return _repeat(requests, f"{plan['run']}-{slot}-")


def _repeat(requests, prefix: str):
    """The requests over and over, ``{seq}`` in a body replaced by a number unique to the run."""
    for number in itertools.count():
        for request in requests:
            if "{seq}" in request["body"]:
                request = {**request, "body": request["body"].replace("{seq}", f"{prefix}{number}"), "unique": True}
            yield request


def _run(plan: dict) -> dict:
    gate = threading.Barrier(plan["connections"] + 1)
    workers = [_Worker(plan, _work_for(plan, slot), gate) for slot in range(plan["connections"])]
    for worker in workers:
        worker.start()
    gate.wait(60)
    started = time.perf_counter()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - started
    samples = sorted(s for w in workers for s in w.samples)
    errors = [e for w in workers for e in w.errors]

    def pct(q: float) -> float:
        return samples[min(len(samples) - 1, int(q * len(samples)))] * 1000 if samples else 0.0

    return {
        "requests": len(samples) - len(errors),
        "errors": len(errors),
        "seconds": elapsed,
        "p50_ms": pct(0.5),
        "p99_ms": pct(0.99),
        "first_error": errors[0] if errors else "",
    }


if __name__ == "__main__":
    with open(sys.argv[1]) as plan_file:
        print(json.dumps(_run(json.load(plan_file))))
