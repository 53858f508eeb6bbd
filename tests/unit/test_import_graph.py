"""The controller's package import graph: no cycles, no upward arrows, no HTTP, wire views or request schemas in the domain.

A package is the first path part under ``controller/`` (``controller/model/x.py``
is ``model``; ``controller/app.py`` is ``app``). Imports under ``if TYPE_CHECKING:``
do not count; imports inside functions do (they still couple the packages).
"""

from __future__ import annotations

import ast
from pathlib import Path

import controller

ROOT = Path(controller.__file__).parent
#: layers, lowest first: a package may import its own layer and the ones below, never above
LAYERS = [
    {"errors", "clock", "ids", "config", "heap", "entities", "gc_pause", "private_files"},
    {"store", "pki", "policy", "fabric"},
    {"model", "auth", "enroll", "oidc"},
    {"ops", "events", "event_file", "simulation", "bootstrap", "router_link"},
    {"api"},
    {"app", "registry", "server", "ctrl", "console", "__main__", "__init__"},
]
DOMAIN = {"model", "auth", "enroll", "oidc", "policy", "store", "pki"}
#: names of wire-rendering hooks that belong to ``controller/api/mappers``, never to the domain
VIEW_HOOKS = {"view", "extend_view"}
#: request-body schema attributes: they belong to ``controller/api/schemas``, never to a manager
REQUEST_SCHEMAS = {"create_schema", "update_schema", "patch_schema"}


def package(path: Path) -> str:
    parts = path.relative_to(ROOT).parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def imported_modules(tree: ast.AST):
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(inner) for inner in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            if node.module == "controller":  # from controller import errors
                yield from (f"controller.{alias.name}" for alias in node.names)


def import_edges() -> dict[tuple[str, str], list[str]]:
    """``{(from package, to package): [files]}`` for imports between controller packages."""
    edges: dict[tuple[str, str], list[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        source = package(path)
        for module in imported_modules(ast.parse(path.read_text())):
            parts = module.split(".")
            if parts[0] == "controller" and len(parts) > 1 and parts[1] != source:
                files = edges.setdefault((source, parts[1]), [])
                name = str(path.relative_to(ROOT.parent))
                if name not in files:
                    files.append(name)
    return edges


def http_imports() -> list[str]:
    """Domain modules importing Falcon or the API layer."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        if package(path) in DOMAIN:
            for module in imported_modules(ast.parse(path.read_text())):
                if module.split(".")[0] == "falcon" or module.startswith("controller.api"):
                    found.append(f"{path.relative_to(ROOT.parent)} imports {module}")
    return found


def wire_rendering(tree: ast.AST) -> list[str]:
    """View hooks defined and ``_links`` written in a module: wire rendering, the mappers' job."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in VIEW_HOOKS:
            found.append((node.lineno, f"defines {node.name}()"))
        elif isinstance(node, ast.Constant) and node.value == "_links":
            found.append((node.lineno, "renders _links"))
    return [f"line {line}: {what}" for line, what in sorted(found)]


def request_schemas(tree: ast.AST) -> list[str]:
    """Assignments to a request-schema attribute (plain, annotated or unpacked) in a module."""
    found = []
    for node in ast.walk(tree):
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, (ast.Name, ast.Attribute)):
                    attr = name.id if isinstance(name, ast.Name) else name.attr
                    if attr in REQUEST_SCHEMAS:
                        found.append((node.lineno, attr))
    return [f"line {line}: declares {attr}" for line, attr in sorted(found)]


def domain_request_schemas() -> list[str]:
    return [
        f"{path.relative_to(ROOT.parent)} {finding}"
        for path in sorted(ROOT.rglob("*.py"))
        if package(path) in DOMAIN
        for finding in request_schemas(ast.parse(path.read_text()))
    ]


def domain_wire_rendering() -> list[str]:
    return [
        f"{path.relative_to(ROOT.parent)} {finding}"
        for path in sorted(ROOT.rglob("*.py"))
        if package(path) in DOMAIN
        for finding in wire_rendering(ast.parse(path.read_text()))
    ]


def layer_of(name: str) -> int | None:
    return next((index for index, members in enumerate(LAYERS) if name in members), None)


def upward_edges(edges) -> list[str]:
    """Arrows to a higher layer (a package with no layer yet is the concern of the test below)."""
    return sorted(
        f"{a} -> {b} ({', '.join(files)})"
        for (a, b), files in edges.items()
        if None not in (layer_of(a), layer_of(b)) and layer_of(b) > layer_of(a)
    )


def cycles(edges) -> list[list[str]]:
    """Strongly connected components of more than one package (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def cycle_edges(edges) -> list[str]:
    members = {name for component in cycles(edges) for name in component}
    return sorted(f"{a} -> {b}" for a, b in edges if a in members and b in members)


EDGES = import_edges()


def test_every_package_has_a_layer():
    packages = {a for a, _ in EDGES} | {b for _, b in EDGES}
    assert sorted(name for name in packages if layer_of(name) is None) == []


def test_the_package_graph_has_no_cycle():
    assert cycles(EDGES) == [], "cycle edges: " + "; ".join(cycle_edges(EDGES))


def test_no_package_imports_a_higher_layer():
    assert upward_edges(EDGES) == []


def test_domain_packages_import_neither_falcon_nor_the_api_layer():
    assert http_imports() == []


def test_domain_packages_render_no_wire_views():
    assert domain_wire_rendering() == []


def test_domain_managers_declare_no_request_schemas():
    assert domain_request_schemas() == []


def test_the_request_schema_detector_sees_every_form_of_declaration():
    source = (
        "class M:\n    create_schema = CREATE\n    update_schema: dict | None = None\n"
        "    patch_schema, other = PATCH, 1\nM.create_schema = {}"
    )
    assert request_schemas(ast.parse(source)) == [
        "line 2: declares create_schema",
        "line 3: declares update_schema",
        "line 4: declares patch_schema",
        "line 5: declares create_schema",
    ]
    assert request_schemas(ast.parse("class M:\n    schema = CREATE\n    body = validate_schema(x)")) == []


def test_the_wire_rendering_detector_sees_view_hooks_and_links():
    source = "class M:\n    def extend_view(self, record, out):\n        out['_links'] = {}\n    def view(self): ..."
    assert wire_rendering(ast.parse(source)) == [
        "line 2: defines extend_view()",
        "line 3: renders _links",
        "line 4: defines view()",
    ]
    assert wire_rendering(ast.parse("def render(record):\n    return {'id': record['id']}")) == []


def test_the_detectors_see_a_cycle_and_an_upward_arrow():
    edges = {("model", "api"): ["m.py"], ("api", "model"): ["a.py"], ("store", "pki"): ["s.py"]}
    assert cycles(edges) == [["api", "model"]]
    assert upward_edges(edges) == ["model -> api (m.py)"]
