"""Rename the pytest plugin's old fixture names to their ``ziti_`` names in test files.

``python tools/rename_fixtures.py tests/`` rewrites, in every test function and
fixture that takes one of the old names as a parameter (not Hypothesis-driven ones), that parameter and every
use of it in the function's body, plus ``getfixturevalue("old")`` strings. A file
that defines its own module-level function of an old name keeps it untouched.
A merge aid: run it over test files written against the old names.
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

RENAMES = {"controller_app": "ziti_app", "clock": "ziti_clock", "config": "ziti_config",
           "http_server": "ziti_http_server", "unique": "ziti_unique", "network": "ziti_network",
           "controller_mode": "ziti_mode", "mode": "ziti_mode"}


def _takes_fixtures(func) -> bool:
    """Tests and fixtures take fixtures; Hypothesis-driven functions take drawn values."""
    decorators = {ast.unparse(d).split("(")[0].split(".")[-1] for d in func.decorator_list}
    if decorators & {"given", "rule", "invariant", "initialize", "precondition"}:
        return False
    return func.name.startswith("test") or "fixture" in decorators


def _edits(tree: ast.Module) -> list[tuple[int, int, str, str]]:
    own = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    renames = {old: new for old, new in RENAMES.items() if old not in own}
    edits = set()
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) or not _takes_fixtures(func):
            continue
        params = {a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)} & set(renames)
        for node in ast.walk(func):
            if isinstance(node, ast.arg) and node.arg in params:
                edits.add((node.lineno, node.col_offset, node.arg, renames[node.arg]))
            elif isinstance(node, ast.Name) and node.id in params:
                edits.add((node.lineno, node.col_offset, node.id, renames[node.id]))
    return sorted(edits, reverse=True)


def rename(text: str) -> str:
    lines = text.splitlines(keepends=True)
    for lineno, col, old, new in _edits(ast.parse(text)):
        raw = lines[lineno - 1].encode()
        assert raw[col:col + len(old)] == old.encode(), (lineno, col, old)
        lines[lineno - 1] = (raw[:col] + new.encode() + raw[col + len(old):]).decode()
    out = "".join(lines)
    for old, new in RENAMES.items():
        out = re.sub(rf'getfixturevalue\((["\']){old}\1\)', rf'getfixturevalue(\g<1>{new}\g<1>)', out)
    return out


def main(paths: list[str]) -> int:
    for root in paths:
        files = [Path(root)] if root.endswith(".py") else sorted(Path(root).rglob("*.py"))
        for path in files:
            text = path.read_text()
            changed = rename(text)
            if changed != text:
                path.write_text(changed)
                print(f"renamed fixtures in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
