"""A fleet of SDKs that behave as libziti 1.x does, for load on one controller.

Each :class:`Sdk` holds one keep-alive TLS connection presenting its own client
certificate and follows the C SDK's schedule: log in (OIDC by default:
authorize, cert login, callback, code exchange; legacy ``POST /authenticate``
on request), read its identity, edge routers and services, then poll
``GET /current-api-session/service-updates`` every 10 s (listing services again
when ``lastChangeAt`` moves) and ``/current-identity/edge-routers`` every 60 s,
refreshing its OIDC tokens at two thirds of their life. A :class:`Fleet` runs N
of them on one asyncio loop, bounded in time, and streams one :class:`Second`
per second (polls, latency p50/p99, errors, the controller's CPU and RSS when its
process id is known) to callbacks; :meth:`Fleet.login_storm` times N logins at once.

Identities come from :func:`provision`: a CA of the fleet's own, registered and
verified with auto-enrollment, whose leaf certificates enroll on first contact
(``POST /enroll?method=ca``), as a fleet provisioned by its maker's CA does.
Run it from Python (``Fleet(...).run_sync(...)``), from ``ziti-harness fleet``,
or over Locust workers (``harness/dataplane/locust_fleet.py``).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import secrets
import ssl
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable
from urllib.parse import quote, urlsplit

from controller.server.serve import raise_open_files
from harness.client import pki as hp
from harness.client.oidc import C_REDIRECT, pkce

CLIENT = "/edge/client/v1"
SDK_BODY = {
    "sdkInfo": {"type": "ziti-sdk-c", "version": "1.18.3", "revision": "fleet", "branch": "main", "appID": "fleet"},
    "envInfo": {"os": "Linux", "osRelease": "6.1", "osVersion": "6.1", "arch": "x86_64", "hostname": "fleet"},
}
SCOPE = quote("openid offline_access")


@dataclass
class Schedule:
    """How often an SDK polls (libziti 1.x's defaults) and how it logs in."""

    service_updates: float = 10.0
    edge_routers: float = 60.0
    #: ``oidc`` (libziti 1.x), ``legacy`` (``POST /authenticate``) or ``none`` (poll only: an anchor server)
    login: str = "oidc"


@dataclass
class Second:
    """One second of a fleet's run."""

    t: float
    polls: int = 0
    errors: int = 0
    logged_in: int = 0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    max_ms: float = 0.0
    cpu_percent: float | None = None
    rss_mb: float | None = None


@dataclass
class Report:
    """What a fleet's run saw: its seconds, and totals over the steady part."""

    clients: int
    seconds: list[Second] = field(default_factory=list)
    #: the polls' latencies after the warm-up (every SDK started and polled once)
    latencies_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    logged_in: int = 0
    #: how long the steady part (after the warm-up) lasted
    steady_seconds: float = 0.0

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0

    def summary(self) -> dict:
        polls = len(self.latencies_ms)
        cpu = [s.cpu_percent for s in self.seconds if s.cpu_percent is not None]
        rss = [s.rss_mb for s in self.seconds if s.rss_mb is not None]
        return {
            "clients": self.clients,
            "logged_in": self.logged_in,
            "polls": polls,
            "polls_per_second": polls / self.steady_seconds if self.steady_seconds else 0.0,
            "p50_ms": self.percentile(0.50),
            "p99_ms": self.percentile(0.99),
            "max_ms": max(self.latencies_ms, default=0.0),
            "errors": len(self.errors),
            "controller_cpu_percent": sum(cpu) / len(cpu) if cpu else None,
            "controller_rss_mb": rss[-1] if rss else None,
        }


class HttpError(Exception):
    """A reply the SDK did not expect."""


class Sdk:
    """One simulated SDK: its certificate, its connection, its tokens."""

    def __init__(
        self, url: str, context: ssl.SSLContext, *, schedule: Schedule, name: str = "sdk", source: str | None = None
    ):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port or 443
        self.context, self.schedule, self.name = context, schedule, name
        self.source = source  # the local address this SDK connects from (a device of its own)
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.auth_header = ""
        self.refresh_token: str | None = None
        self.refresh_at = float("inf")
        self.last_change: str | None = None

    # -- the wire ----------------------------------------------------------------
    async def connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(
            self.host,
            self.port,
            ssl=self.context,
            server_hostname=self.host,
            local_addr=(self.source, 0) if self.source else None,
        )

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    async def request(self, method: str, target: str, body: bytes = b"", headers: tuple = ()) -> tuple:
        """One request on the keep-alive connection: ``(status, headers, body)``; reconnects once if it dropped."""
        for attempt in (0, 1):
            if self.writer is None:
                await self.connect()
            try:
                return await self._exchange(method, target, body, headers)
            except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
                self.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    async def _exchange(self, method, target, body, headers) -> tuple:
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.host}:{self.port}", "Accept: application/json"]
        if self.auth_header:
            lines.append(self.auth_header)
        lines.extend(headers)
        if body or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body)}")
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        reply_headers = {}
        for line in head.decode("latin-1").split("\r\n")[1:]:
            if ":" in line:
                key, _, value = line.partition(":")
                reply_headers[key.strip().lower()] = value.strip()
        if "content-length" in reply_headers:
            data = await self.reader.readexactly(int(reply_headers["content-length"]))
        elif reply_headers.get("transfer-encoding", "").lower() == "chunked":
            data = await self._chunked()
        else:
            data = b""
        if reply_headers.get("connection", "").lower() == "close":
            self.close()
        return status, reply_headers, data

    async def _chunked(self) -> bytes:
        parts = []
        while True:
            size = int((await self.reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                await self.reader.readline()
                return b"".join(parts)
            parts.append((await self.reader.readexactly(size + 2))[:-2])

    async def json(self, method: str, target: str, body: dict | None = None) -> dict:
        data = json.dumps(body).encode() if body is not None else b""
        headers = ("Content-Type: application/json",) if body is not None else ()
        status, _, reply = await self.request(method, target, data, headers)
        if status >= 300:
            raise HttpError(f"{method} {target.split('?')[0]}: {status}")
        return json.loads(reply) if reply else {}

    # -- the SDK's sequence --------------------------------------------------------
    async def enroll(self) -> None:
        """CA auto-enrollment with this SDK's certificate (a 409 means it is enrolled already)."""
        status, _, _ = await self.request(
            "POST", f"{CLIENT}/enroll?method=ca", b"{}", ("Content-Type: application/json",)
        )
        if status not in (200, 409):
            raise HttpError(f"enroll: {status}")

    async def login(self) -> None:
        self.auth_header = ""
        if self.schedule.login == "none":
            return
        if self.schedule.login == "oidc":
            await self._oidc_login()
        else:
            data = await self.json("POST", f"{CLIENT}/authenticate?method=cert", SDK_BODY)
            self.auth_header = f"zt-session: {data['data']['token']}"

    async def _oidc_login(self) -> None:
        verifier, challenge = pkce()
        state = secrets.token_urlsafe(12)
        query = (
            f"client_id=openziti&scope={SCOPE}&response_type=code&redirect_uri={quote(C_REDIRECT, safe='')}"
            f"&code_challenge={challenge}&code_challenge_method=S256&state={state}&audience=openziti"
        )
        status, headers, _ = await self.request("POST", f"/oidc/authorize?{query}")
        location = headers.get("location", "")
        if status not in (302, 303) or "authRequestID=" not in location:
            raise HttpError(f"authorize: {status}")
        request_id = location.split("authRequestID=", 1)[1].split("&", 1)[0]
        body = json.dumps(SDK_BODY).encode()
        status, headers, _ = await self.request(
            "POST", f"/oidc/login/cert?id={request_id}", body, ("Content-Type: application/json",)
        )
        if status not in (302, 303):
            raise HttpError(f"login: {status}")
        status, headers, _ = await self.request("GET", _path(headers["location"]))
        location = headers.get("location", "")
        if status not in (302, 303) or "code=" not in location:
            raise HttpError(f"callback: {status}")
        form = (
            f"state={state}&code={location.split('code=', 1)[1]}&grant_type=authorization_code"
            f"&code_verifier={verifier}&client_id=openziti&redirect_uri={C_REDIRECT}"
        )
        await self._take_tokens("code exchange", form.encode())

    async def _take_tokens(self, step: str, form: bytes, extra: tuple = ()) -> None:
        headers = ("Content-Type: application/x-www-form-urlencoded", *extra)
        self.auth_header = ""
        status, _, reply = await self.request("POST", "/oidc/oauth/token", form, headers)
        if status != 200:
            raise HttpError(f"{step}: {status}")
        tokens = json.loads(reply)
        self.auth_header = f"Authorization: Bearer {tokens['access_token']}"
        self.refresh_token = tokens.get("refresh_token")
        self.refresh_at = time.monotonic() + int(tokens["expires_in"]) * 2 / 3

    async def refresh(self) -> None:
        """New tokens by the ``refresh_token`` grant (the C SDK's)."""
        form = f"client_id=openziti&grant_type=refresh_token&refresh_token={self.refresh_token}".encode()
        await self._take_tokens("refresh", form, ("Authorization: Basic b3BlbnppdGk6",))

    async def after_login(self) -> None:
        if self.schedule.login == "none":
            return
        await self.json("GET", f"{CLIENT}/current-identity")
        await self.json("GET", f"{CLIENT}/current-identity/edge-routers")
        await self.list_services()

    async def list_services(self) -> None:
        offset = 0
        while True:
            page = await self.json("GET", f"{CLIENT}/services?limit=500&offset={offset}")
            offset += 500
            if page["meta"]["pagination"]["totalCount"] <= offset:
                return

    async def poll_service_updates(self) -> None:
        marker = (await self.json("GET", f"{CLIENT}/current-api-session/service-updates")).get("data") or {}
        if marker.get("lastChangeAt") != self.last_change:
            changed, self.last_change = self.last_change is not None, marker.get("lastChangeAt")
            if changed:
                await self.list_services()

    async def poll_edge_routers(self) -> None:
        await self.json("GET", f"{CLIENT}/current-identity/edge-routers")


class _Meter:
    """Per-second figures of a run, handed to callbacks as each second ends."""

    def __init__(self, report: Report, on_second: list, pid: int | None, warmup: float):
        self.report, self.on_second, self.pid = report, on_second, pid
        self.started = time.monotonic()
        self.steady_from = self.started + warmup
        self.current = Second(0.0)
        self.latencies: list[float] = []
        self._cpu = _cpu_seconds(pid)

    def poll(self, took_ms: float) -> None:
        self.current.polls += 1
        self.latencies.append(took_ms)
        if time.monotonic() >= self.steady_from:
            self.report.latencies_ms.append(took_ms)

    def error(self, text: str) -> None:
        self.current.errors += 1
        if len(self.report.errors) < 1000:
            self.report.errors.append(text)

    def tick(self) -> None:
        second, self.current = self.current, Second(round(time.monotonic() - self.started, 1))
        ordered = sorted(self.latencies)
        self.latencies = []
        if ordered:
            second.p50_ms = ordered[len(ordered) // 2]
            second.p99_ms = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
            second.max_ms = ordered[-1]
        second.logged_in = self.report.logged_in
        if self.pid is not None:
            cpu = _cpu_seconds(self.pid)
            if cpu is not None and self._cpu is not None:
                second.cpu_percent = (cpu - self._cpu) * 100
            self._cpu, second.rss_mb = cpu, _rss_mb(self.pid)
        self.report.seconds.append(second)
        for callback in self.on_second:
            callback(second)


class Fleet:
    """N SDKs against one controller, on one asyncio loop.

    Args:
        url: the controller's HTTPS address, or a cluster's members' (SDK n connects to ``url[n % len(url)]``).
        ca_pem: the CAs the SDKs trust for the controller's certificate.
        identities: one certificate (``harness.client.pki.CertKey``) per SDK, from :func:`provision`.
        schedule: polling periods and login style.
        controller_pid: the controller's process, for its CPU and RSS per second.
        enroll: whether each SDK enrolls its certificate first (CA auto-enrollment).
    """

    def __init__(
        self,
        url: str | list[str],
        ca_pem: str,
        identities: list,
        *,
        schedule: Schedule | None = None,
        controller_pid: int | None = None,
        enroll: bool = True,
        seed: int = 1,
    ):
        urls = [url] if isinstance(url, str) else list(url)
        self.url, self.ca_pem, self.identities = urls[0], ca_pem, list(identities)
        self.schedule = schedule or Schedule()
        self.controller_pid, self.enroll = controller_pid, enroll
        self.rng = random.Random(seed)
        self._folder = Path(tempfile.mkdtemp(prefix="ziti-fleet-"))
        loopback = all(urlsplit(one).hostname == "127.0.0.1" for one in urls)
        self.sdks = [
            Sdk(
                urls[number % len(urls)],
                self._context(number, cert_key),
                schedule=self.schedule,
                name=f"sdk-{number}",
                source=_loopback_source(number) if loopback else None,
            )
            for number, cert_key in enumerate(self.identities)
        ]
        raise_open_files(len(self.sdks) + 256)

    def _context(self, number: int, cert_key) -> ssl.SSLContext:
        context = ssl.create_default_context(cadata=self.ca_pem)
        if cert_key is None:  # an anchor server: no client certificate
            return context
        path = self._folder / f"{number}.pem"
        path.write_text(cert_key.chain_pem + cert_key.key_pem)
        path.chmod(0o600)
        context.load_cert_chain(str(path))
        path.unlink()
        return context

    # -- runs ----------------------------------------------------------------------
    def run_sync(self, seconds: float, **kwargs) -> Report:
        """:meth:`run` on a fresh event loop."""
        return asyncio.run(self.run(seconds, **kwargs))

    async def run(
        self,
        seconds: float,
        *,
        on_second: Callable[[Second], None] | list | None = None,
        ramp: float | None = None,
        warmup: float | None = None,
    ) -> Report:
        """Start every SDK (spread over ``ramp`` seconds, default one poll period) and poll until ``seconds`` pass.

        The report's totals count the polls after ``warmup`` seconds (default: the ramp and one poll period);
        the per-second figures count them all.
        """
        report = Report(len(self.sdks))
        callbacks = on_second if isinstance(on_second, list) else [on_second] if on_second else []
        ramp = self.schedule.service_updates if ramp is None else ramp
        warmup = ramp + self.schedule.service_updates if warmup is None else warmup
        meter = _Meter(report, callbacks, self.controller_pid, warmup)
        deadline = time.monotonic() + seconds
        ticker = asyncio.ensure_future(self._tick(meter, deadline))
        try:
            starts = [self.rng.uniform(0, ramp) for _ in self.sdks]
            await asyncio.wait_for(
                asyncio.gather(*(self._live(sdk, start, deadline, meter) for sdk, start in zip(self.sdks, starts))),
                seconds + 30,
            )
        finally:
            ticker.cancel()
            meter.tick()
            report.steady_seconds = max(0.0, time.monotonic() - meter.steady_from)
            for sdk in self.sdks:
                sdk.close()
        return report

    async def _tick(self, meter: _Meter, deadline: float) -> None:
        while time.monotonic() < deadline:
            await asyncio.sleep(1.0)
            meter.tick()

    async def _live(self, sdk: Sdk, start: float, deadline: float, meter: _Meter) -> None:
        await asyncio.sleep(start)
        try:
            await self._start(sdk)
        except (HttpError, OSError, ssl.SSLError, asyncio.IncompleteReadError, KeyError, ValueError) as ex:
            meter.error(f"{sdk.name} start: {ex}")
            return
        meter.report.logged_in += 1
        now = time.monotonic()
        next_updates = now + self.schedule.service_updates
        next_routers = now + self.schedule.edge_routers
        while True:
            wake = min(next_updates, next_routers, sdk.refresh_at)
            if wake >= deadline:
                return
            await asyncio.sleep(max(0.0, wake - time.monotonic()))
            try:
                if sdk.refresh_at <= wake:
                    await sdk.refresh()
                    continue
                poll = sdk.poll_service_updates if next_updates <= next_routers else sdk.poll_edge_routers
                if next_updates <= next_routers:
                    next_updates += self.schedule.service_updates
                else:
                    next_routers += self.schedule.edge_routers
                began = time.perf_counter()
                await poll()
                meter.poll((time.perf_counter() - began) * 1000)
            except (HttpError, OSError, ssl.SSLError, asyncio.IncompleteReadError, KeyError, ValueError) as ex:
                meter.error(f"{sdk.name}: {ex}")

    async def _start(self, sdk: Sdk) -> None:
        await sdk.request("GET", f"{CLIENT}/version")
        if self.enroll and self.schedule.login != "none":
            await sdk.enroll()
        await sdk.login()
        await sdk.after_login()

    def login_storm(self) -> dict:
        """Every SDK connects and logs in at once: how long until all hold tokens, and how many failed."""
        return asyncio.run(self._storm())

    async def _storm(self) -> dict:
        if self.enroll:  # enrollment is provisioning, not the storm
            await asyncio.gather(*(sdk.enroll() for sdk in self.sdks))
            for sdk in self.sdks:
                sdk.close()
        began = time.perf_counter()

        async def one(sdk: Sdk) -> float | str:
            try:
                await sdk.login()
                return time.perf_counter() - began
            except (HttpError, OSError, ssl.SSLError, asyncio.IncompleteReadError, KeyError, ValueError) as ex:
                return f"{type(ex).__name__}: {ex}"

        outcomes = await asyncio.wait_for(asyncio.gather(*(one(sdk) for sdk in self.sdks)), 120)
        for sdk in self.sdks:
            sdk.close()
        done = sorted(o for o in outcomes if isinstance(o, float))
        failed = [o for o in outcomes if isinstance(o, str)]
        return {
            "clients": len(self.sdks),
            "logged_in": len(done),
            "failed": len(failed),
            "seconds": done[-1] if done else 0.0,
            "p50_seconds": done[len(done) // 2] if done else 0.0,
            "first_errors": failed[:3],
        }


# -- provisioning ------------------------------------------------------------------


def provision(admin, count: int, *, prefix: str = "fleet", key_type: str = "ec", with_root: bool = False):
    """``count`` client certificates under a new CA the controller trusts for auto-enrollment and login.

    Args:
        admin: an admin ``harness.client.ZitiClient``.
        count: how many SDK certificates to make.
        prefix: the CA's name; the identities are named ``PREFIX-sdk-N`` on enrollment.
        key_type: the leaves' key type (``ec`` is quick to make).
        with_root: return the CA itself (``harness.client.pki.CertKey``) instead, to make leaves later.

    Returns:
        The leaf certificates (``harness.client.pki.CertKey``), one per SDK, or the CA.
    """
    from harness.dataplane.flows import verify_ca

    root = hp.make_root_ca(f"{prefix} fleet CA")
    ca_id = admin.management.create_ca(
        body={
            "name": prefix,
            "certPem": root.cert_pem,
            "isAutoCaEnrollmentEnabled": True,
            "isOttCaEnrollmentEnabled": False,
            "isAuthEnabled": True,
            "identityRoles": ["fleet"],
        }
    )["id"]
    verify_ca(admin, ca_id, root)
    if with_root:
        return root
    key = hp.new_key(key_type)  # one key for every leaf: making keys is the driver's cost, not the controller's
    return [hp.make_leaf(root, f"sdk-{number}", key=key) for number in range(count)]


def _cpu_seconds(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


#: SDKs per loopback source address: each address stays under the controller's per-address cap (512)
PER_SOURCE = 250


def _loopback_source(number: int) -> str:
    """A loopback address of its own for every ``PER_SOURCE`` SDKs (127.0.1.0 onwards), as distinct devices."""
    block = number // PER_SOURCE
    return f"127.0.{1 + block // 250}.{1 + block % 250}"


def _path(location: str) -> str:
    parts = urlsplit(location)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def second_dict(second: Second) -> dict:
    """A :class:`Second` as plain data (JSON lines, notebook tables)."""
    return asdict(second)
