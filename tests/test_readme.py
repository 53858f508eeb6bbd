"""The README's Python blocks run as written, in order, from the repository root."""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)


def test_readme_has_a_tour():
    blocks = python_blocks()
    assert blocks and "LocalController" in blocks[0]


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
