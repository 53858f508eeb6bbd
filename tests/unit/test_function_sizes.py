"""No function of the HTTP edge (``controller/api``) runs past 80 lines: route tables are rows, handlers short."""

from __future__ import annotations

import ast
from pathlib import Path

import controller.api

LIMIT = 80


def long_functions(root: Path) -> set[str]:
    return {
        f"{path.relative_to(root).as_posix()}:{node.name}"
        for path in root.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > LIMIT
    }


def test_no_function_in_the_api_layer_is_longer_than_the_limit():
    assert long_functions(Path(controller.api.__file__).parent) == set()
