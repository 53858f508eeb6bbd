"""Virtual SDK clients: simulated identities that talk to a controller as a real SDK does.

Each :class:`VirtualClient` follows the request sequence observed from the real
C SDK: ``GET /version``, the external JWT signers, legacy ``POST /authenticate``
at the root path, the CA bundle, current identity and API session, its edge
routers, the service-update marker and the service list (paged by 25); then on
every refresh it polls the identity, routers and marker, lists services again
only when ``lastChangeAt`` moved, and dials services by creating sessions.
A :class:`Population` drives N of them concurrently, bounded in time and in
requests, and reports what they saw.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

import httpx

SDK_INFO = {
    "type": "ziti-sdk-c",
    "version": "1.18.0",
    "revision": "harness",
    "branch": "main",
    "appID": "virtual",
    "appVersion": "1",
}
ENV_INFO = {
    "os": "Linux",
    "osRelease": "6.1",
    "osVersion": "6.1",
    "arch": "x86_64",
    "hostname": "virtual",
    "domain": "",
    "deviceId": "virtual",
}
CLIENT = "/edge/client/v1"


@dataclass
class Observation:
    """What one virtual client saw."""

    name: str
    statuses: Counter = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    services: set[str] = field(default_factory=set)
    edge_routers: set[str] = field(default_factory=set)
    sessions: int = 0
    service_refreshes: int = 0
    requests: int = 0
    logged_in: bool = False


class VirtualClient:
    """One simulated SDK identity."""

    def __init__(
        self,
        http: httpx.Client,
        name: str,
        *,
        username: str | None = None,
        password: str | None = None,
        dial_probability: float = 0.5,
        rng: random.Random | None = None,
    ):
        self.http, self.name = http, name
        self.username, self.password = username, password
        self.dial_probability = dial_probability
        self.rng = rng or random.Random(name)
        self.token: str | None = None
        self.last_change: str | None = None
        self.seen = Observation(name)

    # -- wire ---------------------------------------------------------------
    def _send(self, method: str, path: str, **kwargs) -> httpx.Response | None:
        headers = {"Accept": "application/json", **kwargs.pop("headers", {})}
        if self.token:
            headers["zt-session"] = self.token
        self.seen.requests += 1
        try:
            response = self.http.request(method, path, headers=headers, **kwargs)
        except httpx.HTTPError as ex:
            self.seen.errors.append(f"{method} {path}: {type(ex).__name__}")
            return None
        self.seen.statuses[response.status_code] += 1
        if response.status_code >= 400 and response.status_code != 401:
            self.seen.errors.append(f"{method} {path}: {response.status_code}")
        return response

    def _data(self, response: httpx.Response | None):
        if response is None or response.status_code >= 300:
            return None
        return response.json().get("data")

    # -- the SDK's sequence ----------------------------------------------------
    def start(self) -> bool:
        """Version, signers, login and the after-login sequence. True when logged in."""
        self._send("GET", "/version")
        self._send("GET", f"{CLIENT}/external-jwt-signers", params={"limit": 25, "offset": 0})
        if not self.login():
            return False
        self._send("GET", f"{CLIENT}/.well-known/est/cacerts")
        self._send("GET", f"{CLIENT}/current-identity")
        self._send("GET", f"{CLIENT}/current-api-session")
        self.refresh(force_services=True)
        return True

    def login(self) -> bool:
        body = {"sdkInfo": SDK_INFO, "envInfo": ENV_INFO}
        method = "cert"
        if self.username:
            body.update(username=self.username, password=self.password)
            method = "password"
        data = self._data(self._send("POST", "/authenticate", params={"method": method}, json=body))
        self.token = data["token"] if data else None
        self.seen.logged_in = bool(self.token)
        return bool(self.token)

    def refresh(self, force_services: bool = False) -> None:
        response = self._send("GET", f"{CLIENT}/current-identity")
        if response is not None and response.status_code == 401:
            self.token = None
            if not self.login():
                return
        routers = self._data(
            self._send("GET", f"{CLIENT}/current-identity/edge-routers", params={"limit": 25, "offset": 0})
        )
        for router in routers or []:
            self.seen.edge_routers.add(router.get("name") or router.get("id"))
        marker = self._data(self._send("GET", f"{CLIENT}/current-api-session/service-updates")) or {}
        if force_services or marker.get("lastChangeAt") != self.last_change:
            self.last_change = marker.get("lastChangeAt")
            self.list_services()

    def list_services(self) -> list[dict]:
        services, offset = [], 0
        while True:
            response = self._send(
                "GET", f"{CLIENT}/services", params={"configTypes": "all", "limit": 25, "offset": offset}
            )
            if response is None or response.status_code != 200:
                break
            payload = response.json()
            services += payload["data"]
            page = payload["meta"]["pagination"]
            offset = page["offset"] + page["limit"]
            if page["totalCount"] <= offset or not payload["data"]:
                break
        self.seen.service_refreshes += 1
        self.seen.services = {s["name"] for s in services}
        self._services = services
        return services

    def dial(self) -> None:
        dialable = [s for s in getattr(self, "_services", []) if "Dial" in (s.get("permissions") or [])]
        if not dialable:
            return
        service = self.rng.choice(dialable)
        response = self._send("POST", f"{CLIENT}/sessions", json={"serviceId": service["id"], "type": "Dial"})
        if response is not None and response.status_code == 201:
            self.seen.sessions += 1

    def step(self) -> None:
        self.refresh()
        if self.rng.random() < self.dial_probability:
            self.dial()


@dataclass
class Report:
    clients: list[Observation]
    seconds: float

    @property
    def requests(self) -> int:
        return sum(c.requests for c in self.clients)

    @property
    def errors(self) -> list[str]:
        return [f"{c.name}: {e}" for c in self.clients for e in c.errors]

    def summary(self) -> dict:
        statuses = Counter()
        for client in self.clients:
            statuses.update(client.statuses)
        return {
            "clients": len(self.clients),
            "logged_in": sum(c.logged_in for c in self.clients),
            "requests": self.requests,
            "requests_per_second": self.requests / self.seconds if self.seconds else 0.0,
            "sessions": sum(c.sessions for c in self.clients),
            "errors": len(self.errors),
            "statuses": dict(sorted(statuses.items())),
        }


class Population:
    """N virtual clients driven concurrently, bounded in time and in steps."""

    def __init__(
        self,
        make_http: Callable[[], httpx.Client],
        credentials: list[tuple[str, str, str]],
        *,
        threads: int = 4,
        dial_probability: float = 0.5,
        seed: int = 1,
    ):
        self.make_http = make_http
        self.credentials = credentials
        self.threads = max(1, min(threads, len(credentials) or 1))
        self.dial_probability = dial_probability
        self.seed = seed

    def run(self, seconds: float = 5.0, max_steps: int = 50) -> Report:
        clients = []
        for index, (name, username, password) in enumerate(self.credentials):
            clients.append(
                VirtualClient(
                    self.make_http(),
                    name,
                    username=username,
                    password=password,
                    dial_probability=self.dial_probability,
                    rng=random.Random(self.seed + index),
                )
            )
        deadline = time.monotonic() + seconds
        started = time.monotonic()
        chunks = [clients[i :: self.threads] for i in range(self.threads)]
        workers = [
            threading.Thread(target=self._drive, args=(chunk, deadline, max_steps), daemon=True) for chunk in chunks
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(seconds + 30)
        for client in clients:
            client.http.close()
        return Report([c.seen for c in clients], time.monotonic() - started)

    @staticmethod
    def _drive(clients: list[VirtualClient], deadline: float, max_steps: int) -> None:
        active = [c for c in clients if time.monotonic() < deadline and c.start()]
        for _ in range(max_steps):
            if time.monotonic() >= deadline or not active:
                return
            for client in active:
                if time.monotonic() >= deadline:
                    return
                client.step()
