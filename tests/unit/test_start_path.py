"""One way to build and start a controller: ``controller.embedded.EmbeddedController``, which
``python -m controller`` (``controller.embedded.serve``) starts through as the harness does."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "controller"


def callers_of(name: str) -> set[str]:
    found = set()
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == name:
                found.add(path.relative_to(ROOT).as_posix())
    return found


def test_only_the_embedded_handle_builds_a_controller_app():
    assert callers_of("create_app") == {"embedded.py"}


def test_the_command_line_server_starts_through_the_handle():
    assert callers_of("EmbeddedController") == {"embedded.py"}  # serve(), which python -m controller runs
    assert callers_of("run_server") == {"__main__.py"}
