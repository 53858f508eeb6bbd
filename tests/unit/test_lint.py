"""The tree passes ``ruff check`` and ``ruff format --check`` with the configuration in pyproject.toml."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def ruff_command() -> list[str]:
    if shutil.which("ruff"):
        return ["ruff"]
    try:
        import ruff  # noqa: F401
    except ImportError:
        pytest.skip("ruff is not installed (pip install -e .[test])")
    return [sys.executable, "-m", "ruff"]


def test_ruff_check_passes():
    result = subprocess.run(
        [*ruff_command(), "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_leaves_the_tree_as_it_is():
    result = subprocess.run(
        [*ruff_command(), "format", "--check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, "run `ruff format .`:\n" + result.stdout + result.stderr
