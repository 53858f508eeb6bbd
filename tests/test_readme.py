"""Every fenced Python block of the README runs as written (```python and ```py alike).

A block whose first line names a test file (``# test_my_sdk.py ...``) is such a file: it runs with
pytest in a project folder of its own, as a user would run it. Every other block runs in order, from
the repository root.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEST_FILE = re.compile(r"# (test_\w+\.py)")


def all_blocks() -> list[str]:
    return re.findall(r"```(?:python|py)\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)


def readme_test_files() -> list[tuple[str, str]]:
    return [(m.group(1), block) for block in all_blocks() if (m := TEST_FILE.match(block))]


def python_blocks() -> list[str]:
    return [block for block in all_blocks() if not TEST_FILE.match(block)]


def test_readme_has_a_tour_and_every_fenced_block_is_run_here():
    blocks = python_blocks()
    assert blocks and "LocalController" in blocks[0]
    fenced = re.findall(r"```(\w*)\n", (ROOT / "README.md").read_text())
    python_like = [lang for lang in fenced if lang in ("python", "py", "python3", "pycon")]
    assert len(python_like) == len(all_blocks()) == len(blocks) + len(readme_test_files())
    assert {name for name, _ in readme_test_files()} == {"test_my_sdk.py", "test_echo.py"}


def test_readme_python_blocks_run_as_written(capsys):
    previous = os.getcwd()
    os.chdir(ROOT)
    try:
        for block in python_blocks():
            exec(compile(block, "README.md", "exec"), {"__name__": "readme"})
    finally:
        os.chdir(previous)
    printed = capsys.readouterr().out
    assert "web-host" in printed and "401 UNAUTHORIZED" in printed and "503 TIMEOUT" in printed
    assert "Default Admin" in printed and "expired: 401" in printed
    assert "b'hello'" in printed and "['edge']" in printed
    assert "0 True" in printed  # the drive() block: its url is defined, the load ran without errors


@pytest.mark.parametrize("name, block", readme_test_files(), ids=lambda v: v if v.startswith("test_") else "")
def test_readme_test_files_pass_with_pytest_in_a_project_of_their_own(name, block, tmp_path):
    (tmp_path / name).write_text(block)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", str(tmp_path)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
