"""The controller's package import graph: no cycles, no upward arrows, no HTTP, wire views or request schemas in the domain.

A package is the first path part under ``controller/`` (``controller/model/x.py``
is ``model``; ``controller/app.py`` is ``app``). Imports under ``if TYPE_CHECKING:``
do not count; imports inside functions do (they still couple the packages).
``from controller import errors`` and relative imports count as imports of what they name.

Beyond imports: no domain function takes a Falcon request or response (a parameter
named ``req``/``resp`` or annotated with a Falcon type) or writes a ``WWW-Authenticate``
value; the harness reaches the controller only through the app, its clock, config and
server (never a manager); the router never imports the controller.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import controller

ROOT = Path(controller.__file__).parent
#: layers, lowest first: a package may import its own layer and the ones below, never above
LAYERS = [
    {"errors", "clock", "ids", "config", "heap", "entities", "gc_pause", "private_files"},
    {"store", "pki", "policy", "fabric"},
    {"model", "auth", "enroll", "oidc"},
    {"ops", "events", "event_file", "simulation", "bootstrap", "router_link", "cluster"},
    {"api"},
    {"app", "registry", "roles", "server", "ctrl", "console", "embedded", "__main__", "__init__"},
]
DOMAIN = {"model", "auth", "enroll", "oidc", "policy", "store", "pki"}
#: names of wire-rendering hooks that belong to ``controller/api/mappers``, never to the domain
VIEW_HOOKS = {"view", "extend_view"}
#: request-body schema attributes: they belong to ``controller/api/schemas``, never to a manager
REQUEST_SCHEMAS = {"create_schema", "update_schema", "patch_schema"}


def package(path: Path) -> str:
    parts = path.relative_to(ROOT).parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def imported_modules(tree: ast.AST, module: str = ""):
    """Modules ``tree`` imports; ``module`` (dotted name of the file) resolves relative imports."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(inner) for inner in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # from . import x, from ..store import db
                anchor = module.split(".")[: -node.level] if module else []
                base = ".".join([*anchor, *([base] if base else [])])
            if not base:
                continue
            yield base
            if base.count(".") == 0 or node.level:  # from controller import errors; from . import x
                yield from (f"{base}.{alias.name}" for alias in node.names)


@cache
def facts(path: Path, module: str) -> dict[str, tuple[str, ...]]:
    """What every check reads of a source file, from one parse: the tree itself is not kept (held for the
    whole module, ~300 trees made every later collection of the test process slower than parsing again)."""
    tree = ast.parse(path.read_text())
    return {
        "imports": tuple(imported_modules(tree, module)),
        "request_schemas": tuple(request_schemas(tree)),
        "wire_rendering": tuple(wire_rendering(tree)),
        "request_objects": tuple(request_objects(tree)),
    }


def imports_of(path: Path, module: str) -> tuple[str, ...]:
    return facts(path, module)["imports"]


def dotted(path: Path) -> str:
    """``controller/model/x.py`` -> ``controller.model.x`` (a package's ``__init__`` names the package)."""
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_edges() -> dict[tuple[str, str], list[str]]:
    """``{(from package, to package): [files]}`` for imports between controller packages."""
    edges: dict[tuple[str, str], list[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        source = package(path)
        for module in imports_of(path, dotted(path)):
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
            for module in imports_of(path, dotted(path)):
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
        for finding in facts(path, dotted(path))["request_schemas"]
    ]


def domain_wire_rendering() -> list[str]:
    return [
        f"{path.relative_to(ROOT.parent)} {finding}"
        for path in sorted(ROOT.rglob("*.py"))
        if package(path) in DOMAIN
        for finding in facts(path, dotted(path))["wire_rendering"]
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


#: packages whose functions see requests only as plain values (RequestInfo, AuthRequest ...)
NO_REQUEST_OBJECTS = DOMAIN | {"ops", "simulation", "events"}
REQUEST_PARAMETERS = {"req", "resp"}
#: what the harness may import of the controller: the app and what starts it, plain values and declarations
HARNESS_ALLOWED = {
    "controller",
    "controller.app",
    "controller.clock",
    "controller.config",
    "controller.console",  # the command line's error classes and exit codes
    "controller.entities",  # entity names and collections (declarations, no manager)
    "controller.gc_pause",
    "controller.heap",
    "controller.embedded",  # the one way the harness starts a controller, and the request bodies netcheck reads
    "controller.cluster.member",  # a cluster member's configuration when a command line starts one
    "controller.cluster.join",  # and its request to join, made by that command line
}
HARNESS_ALLOWED_PACKAGES = ("controller.server",)


def request_objects(tree: ast.AST) -> list[str]:
    """Parameters named ``req``/``resp`` or annotated with a Falcon type, and ``WWW-Authenticate`` values built."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                annotation = ast.unparse(arg.annotation) if arg.annotation is not None else ""
                if arg.arg in REQUEST_PARAMETERS or "falcon" in annotation.lower():
                    found.append((node.lineno, f"takes {arg.arg}{': ' + annotation if annotation else ''}"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and 'realm="' in node.value:
            found.append((node.lineno, "builds a WWW-Authenticate value"))
        elif isinstance(node, ast.JoinedStr) and 'realm="' in ast.unparse(node):
            found.append((node.lineno, "builds a WWW-Authenticate value"))
    return [f"line {line}: {what}" for line, what in sorted(set(found))]


def domain_request_objects() -> list[str]:
    return [
        f"{path.relative_to(ROOT.parent)} {finding}"
        for path in sorted(ROOT.rglob("*.py"))
        if package(path) in NO_REQUEST_OBJECTS
        for finding in facts(path, dotted(path))["request_objects"]
    ]


def foreign_imports(folder: str, allowed) -> list[str]:
    """Imports of ``controller`` modules from ``folder`` (harness/, router/) that ``allowed(module)`` refuses."""
    root = ROOT.parent / folder
    found = []
    for path in sorted(root.rglob("*.py")):
        module_name = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
        for module in imported_modules(ast.parse(path.read_text()), module_name):  # each file read once
            if module.split(".")[0] == "controller" and not allowed(module):
                found.append(f"{path.relative_to(ROOT.parent)} imports {module}")
    return sorted(set(found))


def harness_may_import(module: str) -> bool:
    return module in HARNESS_ALLOWED or module.startswith(HARNESS_ALLOWED_PACKAGES)


@cache
def edges() -> dict[tuple[str, str], list[str]]:
    """:func:`import_edges`, computed by the first test that needs it (not when the file is collected)."""
    return import_edges()


def test_every_package_has_a_layer():
    packages = {a for a, _ in edges()} | {b for _, b in edges()}
    assert sorted(name for name in packages if layer_of(name) is None) == []


def test_the_package_graph_has_no_cycle():
    assert cycles(edges()) == [], "cycle edges: " + "; ".join(cycle_edges(edges()))


def test_no_package_imports_a_higher_layer():
    assert upward_edges(edges()) == []


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


def test_domain_code_takes_no_request_object_and_builds_no_header():
    assert domain_request_objects() == []


def test_the_harness_reaches_the_controller_only_through_the_app_and_what_starts_it():
    """Managers, the registry, auth, the store, the API layer ...: only through HTTP or ``controller.embedded``."""
    assert foreign_imports("harness", harness_may_import) == []


def test_the_router_never_imports_the_controller():
    assert foreign_imports("router", lambda module: False) == []


def test_the_request_object_detector_sees_names_annotations_and_headers():
    source = (
        "def a(req, resp): ...\n"
        "def b(request: falcon.Request): ...\n"
        "def c(*, thing: 'falcon.Response'): ...\n"
        'X = \'Bearer realm="r" error="e"\'\n'
        "def d(realm): return f'zt-session realm=\"{realm}\"'\n"
    )
    assert request_objects(ast.parse(source)) == [
        "line 1: takes req",
        "line 1: takes resp",
        "line 2: takes request: falcon.Request",
        "line 3: takes thing: 'falcon.Response'",
        "line 4: builds a WWW-Authenticate value",
        "line 5: builds a WWW-Authenticate value",
    ]
    assert request_objects(ast.parse("def e(request: AuthRequest, info: RequestInfo): ...")) == []


def test_the_import_detector_sees_from_controller_and_relative_imports():
    tree = ast.parse("from controller import errors, clock\nfrom . import sibling\nfrom ..store import db\n")
    assert list(imported_modules(tree, "controller.model.x")) == [
        "controller",
        "controller.errors",
        "controller.clock",
        "controller.model",
        "controller.model.sibling",
        "controller.store",
        "controller.store.db",
    ]


#: the harness's packages, each importing only those before it; the front ends (cli/, ziti/, testing/, the plugin
#: and the notebook widgets) may import any of them
HARNESS_LAYERS = ("client", "network", "analysis", "dataplane", "processes")
#: a network file's access tests are run by the analysis, imported inside the two functions that need it
HARNESS_EXCEPTIONS = {("network", "harness.analysis.access_tests")}


def harness_upward_imports() -> list[str]:
    found = []
    for layer, name in enumerate(HARNESS_LAYERS):
        for path in sorted((ROOT.parent / "harness" / name).rglob("*.py")):
            for module in imports_of(path, dotted(path)):
                parts = module.split(".")
                if parts[0] != "harness" or len(parts) < 2 or (name, module) in HARNESS_EXCEPTIONS:
                    continue
                target = HARNESS_LAYERS.index(parts[1]) if parts[1] in HARNESS_LAYERS else len(HARNESS_LAYERS)
                if target > layer:
                    found.append(f"{path.relative_to(ROOT.parent)} imports {module}")
    return sorted(set(found))


def test_the_harness_packages_import_only_those_below_them():
    assert harness_upward_imports() == []


def test_the_harness_is_a_dozen_packages_and_modules_at_most():
    entries = [p.name for p in (ROOT.parent / "harness").iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()]
    assert len(entries) <= 12, sorted(entries)
