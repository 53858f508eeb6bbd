"""Domain and service code gets its collaborators explicitly, never the controller as a hallway.

An AST scan of the packages below: no parameter, variable or attribute named ``ctl`` or
``controller``. The registry lives in ``controller/registry.py``; the app (``controller/app.py``)
hands its services to the API layer by name (``controller/api/wiring.py``), so the API is scanned too.
``ALLOWED`` lists what is still being converted (issue 12); it may only shrink: an entry
that no longer matches anything fails too, so it is removed when its module is done.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("model", "ops", "auth", "enroll", "oidc", "policy", "store", "pki", "api", "events", "simulation")
NAMES = frozenset({"ctl", "controller"})
WHOLE_MODULE = "*"

#: module -> functions (``Class.method``) still reaching the controller, or ``*`` for the whole module
ALLOWED: dict[str, frozenset[str]] = {}


class Finder(ast.NodeVisitor):
    """Collects ``(line, function, what)`` for every use of a controller name."""

    def __init__(self):
        self.scope: list[str] = []
        self.found: list[tuple[int, str, str]] = []

    def _note(self, node: ast.AST, what: str) -> None:
        self.found.append((node.lineno, ".".join(self.scope) or "<module>", what))

    def _scoped(self, node) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_ClassDef = _scoped

    def visit_FunctionDef(self, node) -> None:
        self.scope.append(node.name)
        for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
            if arg.arg in NAMES:
                self._note(arg, f"parameter {arg.arg!r}")
        self.generic_visit(node)
        self.scope.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for arg in node.args.args:
            if arg.arg in NAMES:
                self._note(arg, f"lambda parameter {arg.arg!r}")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in NAMES:
            self._note(node, f"attribute .{node.attr}")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in NAMES:
            self._note(node, f"name {node.id!r}")


def uses_by_module() -> dict[str, list[tuple[int, str, str]]]:
    out = {}
    for package in PACKAGES:
        module = ROOT / "controller" / f"{package}.py"
        for path in [module] if module.exists() else sorted((ROOT / "controller" / package).rglob("*.py")):
            finder = Finder()
            finder.visit(ast.parse(path.read_text(), filename=str(path)))
            if finder.found:
                out[path.relative_to(ROOT).as_posix()] = finder.found
    return out


def _allowed(module: str, function: str) -> bool:
    allowed = ALLOWED.get(module, frozenset())
    return WHOLE_MODULE in allowed or function in allowed


def test_no_domain_or_service_module_reaches_for_the_controller():
    offences = [
        f"{module}:{line} in {function}: {what}"
        for module, found in uses_by_module().items()
        for line, function, what in found
        if not _allowed(module, function)
    ]
    assert not offences, "take the collaborators in the constructor instead:\n" + "\n".join(offences)


def test_the_allow_list_only_names_what_still_reaches_for_it():
    uses = uses_by_module()
    stale = [
        f"{module}: {entry}"
        for module, entries in ALLOWED.items()
        for entry in entries
        if not any(entry in (WHOLE_MODULE, function) for _, function, _ in uses.get(module, ()))
    ]
    assert not stale, "remove these from ALLOWED (nothing there uses the controller any more):\n" + "\n".join(stale)


def test_the_scan_sees_a_controller_parameter_and_attribute():
    finder = Finder()
    finder.visit(ast.parse("class M:\n    def __init__(self, ctl):\n        self.store = ctl.store\n"))
    assert [what for _, _, what in finder.found] == ["parameter 'ctl'", "name 'ctl'"]
    finder = Finder()
    finder.visit(ast.parse("def f(x):\n    return x.controller.identities\n"))
    assert [(function, what) for _, function, what in finder.found] == [("f", "attribute .controller")]
