"""The suite's sizes: bounded by default, full with ``--long`` (or ``ZITI_LONG=1``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import settings

from tests import sizes

ROOT = Path(__file__).resolve().parents[2]


def test_sizes_follow_the_variable(monkeypatch):
    monkeypatch.delenv(sizes.ENV, raising=False)
    assert (sizes.examples(1500, 200), sizes.examples(100), sizes.size(24, 9)) == (200, 20, 9)
    for value in ("0", "false", ""):
        monkeypatch.setenv(sizes.ENV, value)
        assert not sizes.is_long()
    monkeypatch.setenv(sizes.ENV, "1")
    assert (sizes.examples(1500, 200), sizes.examples(100), sizes.size(24, 9)) == (1500, 100, 24)


def test_report_sizes(request):
    """Prints what this run uses (the next test reads it from a ``--long`` run)."""
    long_run = request.config.getoption("--long") or sizes.is_long()
    assert settings.default.max_examples == (100 if long_run else 30)
    print(f"SIZES long={sizes.is_long()} profile={settings.default.max_examples} examples={sizes.examples(1500, 200)}")


def test_the_long_option_reaches_the_tests():
    env = {key: value for key, value in os.environ.items() if key != sizes.ENV}
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, "-m", "pytest", "--long", "-n", "0", "-q", "-s", "-p", "no:cacheprovider"]
    command += ["--durations=0", f"{Path(__file__).relative_to(ROOT)}::test_report_sizes"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SIZES long=True profile=100 examples=1500" in done.stdout
