"""Packaging: the controller installs alone, the extras compose, benchmarks stay in the repository."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

BLOCK_HARNESS_ONLY = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {'yaml', 'tqdm', 'hypothesis', 'pytest', 'matplotlib', 'pandas'}:
            raise ImportError('harness-only library imported: ' + name)
sys.meta_path.insert(0, Block())
from controller.app import create_app
import controller.__main__, controller.server.serve
create_app().controller.close()
print('ok')
"""


def test_controller_runs_without_harness_only_libraries():
    result = subprocess.run(
        [sys.executable, "-c", BLOCK_HARNESS_ONLY], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_harness_libraries_are_an_extra_not_controller_dependencies():
    base = " ".join(PROJECT["project"]["dependencies"])
    extras = PROJECT["project"]["optional-dependencies"]
    assert "pyyaml" not in base and "tqdm" not in base
    assert {"pyyaml>=6", "tqdm>=4.66"} <= set(extras["harness"])


def test_test_extra_includes_the_others_instead_of_copying_them():
    extras = PROJECT["project"]["optional-dependencies"]
    included = {
        name.strip()
        for requirement in extras["test"]
        if requirement.startswith("ziti-edge-controller-py[")
        for name in requirement.split("[", 1)[1].rstrip("]").split(",")
    }
    assert {"harness", "notebooks", "load"} <= included
    copied = set(extras["test"]) & (set(extras["notebooks"]) | set(extras["harness"]))
    assert not copied


def test_benchmarks_are_not_installed_as_a_package():
    include = PROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    assert not any(pattern.startswith("benchmarks") for pattern in include)
    assert "controller*" in include and "harness*" in include
