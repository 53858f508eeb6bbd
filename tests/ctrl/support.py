"""Routers as their own processes for the control channel tests: enroll over HTTP, run, kill, restart."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: a process router's deadlines: start-up and detection are polled (real processes), never slept
DEADLINE = 20.0


def router_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "router", "--log-level", "info", *args]


def wait_until(predicate, timeout: float = DEADLINE, what: str = "condition"):
    """Poll ``predicate`` (real processes and sockets only) until truthy or the deadline passes."""
    end = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"{what} not reached within {timeout} s")
        time.sleep(0.02)


class RouterProcess:
    """One edge router created over HTTP, enrolled and run with ``python -m router``."""

    def __init__(self, admin, name: str, folder: Path, roles: tuple[str, ...] = ()):
        self.admin, self.name, self.folder = admin, name, folder
        self.id = admin.create("edge-routers", {"name": name, "roleAttributes": list(roles)})
        self.jwt = admin.mgmt_ok("GET", f"/edge-routers/{self.id}")["enrollmentJwt"]
        self.data = folder / name
        self.ready_file = folder / f"{name}.ready.json"
        self.proc: subprocess.Popen | None = None
        self.log = folder / f"{name}.log"

    def enroll(self, *extra: str) -> subprocess.CompletedProcess:
        jwt_file = self.folder / f"{self.name}.jwt"
        jwt_file.write_text(self.jwt)
        return subprocess.run(
            router_command("enroll", str(jwt_file), "--data", str(self.data), *extra),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def start(self) -> dict:
        """Run it; return the ready file's content once written."""
        self.ready_file.unlink(missing_ok=True)
        with self.log.open("a") as log:
            self.proc = subprocess.Popen(
                router_command("run", "--data", str(self.data), "--ready-file", str(self.ready_file)),
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        wait_until(lambda: self.ready_file.exists() or self.proc.poll() is not None, what=f"{self.name} ready")
        assert self.proc.poll() is None, self.log.read_text()
        self.ready = json.loads(self.ready_file.read_text())
        return self.ready

    def signal(self, sig: int) -> None:
        os.kill(self.proc.pid, sig)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def listing(self) -> dict:
        return self.admin.mgmt_ok("GET", f"/edge-routers/{self.id}")


def restrict_to(admin, stem: str, router_ids: list[str]) -> None:
    """Edge router policies letting ``#stem-*`` identities and the ``#stem`` service use only ``router_ids``."""
    routers = [f"@{router_id}" for router_id in router_ids]
    admin.create(
        "edge-router-policies",
        {
            "name": f"{stem}-routers",
            "semantic": "AnyOf",
            "identityRoles": [f"#{stem}-dialer", f"#{stem}-binder"],
            "edgeRouterRoles": routers,
        },
    )
    admin.create(
        "service-edge-router-policies",
        {"name": f"{stem}-routers", "semantic": "AnyOf", "serviceRoles": [f"#{stem}"], "edgeRouterRoles": routers},
    )


def terminators_on(admin, router_id: str) -> list[dict]:
    return [t for t in admin.mgmt_ok("GET", "/terminators", params={"limit": 500}) if t["routerId"] == router_id]
