"""The real OpenZiti C SDK in a subprocess, in each version at hand.

``libziti-0.29`` is PyPI's ``openziti`` 0.6.0 in this environment (``.[test]`` installs it).
``libziti-1.18`` is ``openziti`` 1.7.1 (libziti 1.18.3), which no registry here serves and which keeps the
same import name: it lives in its own environment, whose python ``REAL_SDK_PYTHON`` names (``.ci/run`` sets it
when the wheel is at hand). A version not at hand skips its tests with the reason.

libziti 1.18 logs in by OIDC when the controller advertises ``OIDC_AUTH`` (the default) and by the legacy
``/authenticate`` otherwise; libziti 0.29 always uses the legacy login.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent / "router" / "sdk_echo.py"
ENV_VAR = "REAL_SDK_PYTHON"
VERSIONS = ("libziti-0.29", "libziti-1.18")


@dataclass(frozen=True)
class RealSdk:
    """One SDK version: ``run`` waits for a mode of ``sdk_echo.py``, ``popen`` starts one in the background."""

    name: str
    python: str

    @property
    def oidc_capable(self) -> bool:
        return self.name != "libziti-0.29"

    def env(self) -> dict:
        return {"PATH": "/usr/bin:/bin", "ZITI_LOG": "2"}

    def command(self, *args) -> list[str]:
        return [self.python, str(SCRIPT), *map(str, args)]

    def run(self, *args, timeout: float = 90) -> str:
        done = subprocess.run(self.command(*args), capture_output=True, text=True, timeout=timeout, env=self.env())
        assert done.returncode == 0, f"{self.name}: {done.stdout}{done.stderr}"
        return done.stdout

    def popen(self, *args, stdin=None) -> subprocess.Popen:
        return subprocess.Popen(
            self.command(*args),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=self.env(),
        )


def sdk_or_skip(name: str) -> RealSdk:
    if name == "libziti-0.29":
        if importlib.util.find_spec("openziti") is None:
            pytest.skip("openziti 0.6.0 (libziti 0.29) is not installed: pip install -e '.[test]'")
        return RealSdk(name, sys.executable)
    python = os.environ.get(ENV_VAR)
    if not python:
        pytest.skip(f"{ENV_VAR} is unset: set it to a python with openziti 1.x (libziti 1.18) installed")
    if not Path(python).is_file():
        pytest.fail(f"{ENV_VAR}={python} is not a file")
    return RealSdk(name, python)


@pytest.fixture(params=VERSIONS)
def real_sdk(request) -> RealSdk:
    """Each real SDK version in turn (skipped with the reason when it is not at hand)."""
    return sdk_or_skip(request.param)
