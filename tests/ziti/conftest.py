"""Fixtures for the ``ziti`` drop-in: the command as a subprocess, a quickstart it started.

Every step runs ``python -m harness.ziti ...`` from the repository root with
``HOME`` pointed at a temporary folder (so the saved login in
``~/.config/ziti/ziti-cli.json`` is the test's own), as an SDK suite runs ``ziti``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.processes.server import free_port

ROOT = Path(__file__).resolve().parents[2]
READY = "controller and router started"


def env_for(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZITI_")}
    env["HOME"] = str(home)
    env["PYTHONPATH"] = str(ROOT)
    return env


class Ziti:
    """``ziti ...`` as a subprocess of this checkout, with its own HOME."""

    def __init__(self, home: Path):
        self.home = home

    def __call__(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "harness.ziti", *map(str, args)],
            cwd=ROOT,
            env=env_for(self.home),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def ok(self, *args: str) -> str:
        done = self(*args)
        assert done.returncode == 0, f"ziti {' '.join(map(str, args))}: {done.stdout}{done.stderr}"
        return done.stdout

    def edge(self, *args: str) -> str:
        return self.ok("edge", *args)


class QuickstartProcess:
    """``ziti edge quickstart`` running in the background; ``lines`` is what it printed so far."""

    def __init__(self, ziti: Ziti, *args: str):
        self.ctrl_port, self.router_port = free_port(), free_port()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "harness.ziti",
                "edge",
                "quickstart",
                "--ctrl-address=127.0.0.1",
                "--router-address=127.0.0.1",
                "--ctrl-port",
                str(self.ctrl_port),
                "--router-port",
                str(self.router_port),
                *args,
            ],
            cwd=ROOT,
            env=env_for(ziti.home),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self.ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if READY in line:
                self.ready.set()

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        # the ready line, then the details block printed with it (up to "instance pid")
        while not (self.ready.wait(0.1) and any("instance pid" in line for line in list(self.lines))):
            assert self.proc.poll() is None, f"quickstart exited early ({self.proc.returncode}):\n{self.output}"
            assert time.monotonic() < deadline, f"quickstart not ready in {timeout}s:\n{self.output}"

    def terminate(self, sig=signal.SIGTERM, timeout: float = 15) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise
        self._reader.join(5)
        return code


@pytest.fixture(scope="module")
def ziti(tmp_path_factory) -> Ziti:
    return Ziti(tmp_path_factory.mktemp("ziti-home"))


@pytest.fixture(scope="module")
def quickstart(ziti, tmp_path_factory):
    """One quickstart (controller and router) for a module; ``ziti`` is logged in to it."""
    qs = QuickstartProcess(ziti, "--home", str(tmp_path_factory.mktemp("qs-home")))
    try:
        qs.wait_ready()
        yield qs
    finally:
        qs.terminate()
