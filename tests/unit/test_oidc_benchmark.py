"""The OIDC benchmark's driver logs in as the C SDK does, step by step, against a real app (figures never asserted)."""

from __future__ import annotations

import pytest

from benchmarks.oidc import STEPS, login_figures


@pytest.mark.parametrize("key_type, alg", [("rsa", "RS256"), ("ec", "ES256")])
def test_the_oidc_login_benchmark_runs_every_step(key_type, alg):
    figures = login_figures(key_type, logins=3, rounds=1)  # raises on any step's unexpected status
    steps = figures[f"[{alg}] CPU µs per step: authorize/login/code/token"].split(" / ")
    assert len(steps) == len(STEPS) and all(float(step) > 0 for step in steps)
    assert figures[f"[{alg}] OIDC cert logins per CPU-s"] > 0
    assert figures[f"[{alg}] legacy cert logins per CPU-s (anchor)"] > 0
