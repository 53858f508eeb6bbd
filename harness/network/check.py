"""Check a network file before anything is written.

The JSON Schema of a network file is derived from the request schemas the
controller serves (its route table) and the harness's kinds: the fields of an
entity are the API's create fields, references by name (``configType``,
``authPolicy``, ``configs``) and role lists take names, and an identity may
carry ``password``/``username``. Unknown fields are errors with a "did you
mean"; every enum and every ``@name`` is checked, and all problems are
reported at once as ``file: kind/name: field: what is wrong``.

The derived schema is kept in ``harness/network/schema.py`` (``python -m harness.network.opgen``
writes it with the operation table; tests/unit/test_netcheck.py fails when it differs from the route table's), so a
command checking a file does not import the controller's operations to derive it again
(``ziti-harness apply`` and ``test``: ~0.2 s of CPU each).
"""

from __future__ import annotations

import copy
import difflib
import functools
from pathlib import Path
from typing import Callable, Iterable

import yaml

from harness.client.kinds import BUILT_IN_CONFIG_TYPES, BY_KEY, KINDS, Kind
from harness.network import NetworkError, yaml_fast

#: YAML loader: the C one when PyYAML was built with libyaml (large files parse ~10x faster)
LOADER = yaml_fast.LOADER
NAMES = {"type": "array", "items": {"type": "string"}}
#: the largest cluster a network file may ask for (raft clusters are small: 3, 5, 7)
MAX_CONTROLLERS = 7
EXTRA_FIELDS = {
    "identities": {
        "password": {"type": "string", "minLength": 5, "maxLength": 100},
        "username": {"type": "string", "minLength": 4, "maxLength": 100},
    },
    # the harness's own: ``ziti-harness up`` runs the router as its own process, linked to these routers
    "edgeRouters": {
        "process": {"type": "boolean"},
        "links": {"type": "array", "items": {"type": "string", "minLength": 1}},
    },
}


class NetworkProblems(NetworkError):
    """A network that cannot be applied as written: every problem, one per line."""

    def __init__(self, source: str, problems: list[str]):
        self.source, self.problems = source, problems
        super().__init__(f"{len(problems)} problem(s) in {source}:\n" + "\n".join(f"  {p}" for p in problems))


# -- the schema -------------------------------------------------------------------


@functools.cache
def _api_bodies() -> dict[str, dict]:
    from controller.embedded import request_bodies

    # the management API's bodies: the fabric API reuses some operationIds (createService) with other bodies
    return request_bodies("management")


def kind_schema(kind: Kind) -> dict:
    """The JSON Schema of one entity of ``kind`` in a network file."""
    body = _api_bodies().get(kind.create_op) or {"properties": {}}
    api = body.get("properties", {})
    props = {"name": {"type": "string", "minLength": 1}, "tags": api.get("tags", {"type": ["object", "null"]})}
    for name in (*kind.fields, *kind.create_only):
        props[name] = copy.deepcopy(api.get(name, {}))
    if "semantic" in props and "enum" not in props["semantic"]:
        props["semantic"] = {"type": "string", "enum": ["AllOf", "AnyOf"]}
    for name, ref in kind.refs.items():
        props[name] = NAMES if ref.many else {"type": "string"}
    for name in kind.roles:
        props[name] = NAMES
    props.update(EXTRA_FIELDS.get(kind.key, {}))
    return {"type": "object", "properties": props, "required": ["name"], "additionalProperties": False}


@functools.cache
def network_schema() -> dict:
    """The JSON Schema of a whole network file (one list per kind), as derived when last written."""
    from harness.network.schema import SCHEMA

    return SCHEMA


def derive_network_schema() -> dict:
    """The JSON Schema of a whole network file, derived from the route table and the kinds."""
    return {
        "type": ["object", "null"],
        "additionalProperties": False,
        "properties": {
            **{kind.key: {"type": ["array", "null"], "items": kind_schema(kind)} for kind in KINDS},
            # access tests: checked by harness.analysis.access_tests when the Network is built
            "tests": {"type": ["array", "null"]},
            # the harness's own: ``ziti-harness up`` runs this many controllers as one cluster
            "controllers": {"type": ["integer", "null"], "minimum": 1, "maximum": MAX_CONTROLLERS},
        },
    }


# -- reading and checking ---------------------------------------------------------


def parse(path: str | Path) -> dict:
    """Parse a YAML network file; a syntax error names ``file:line:column``."""
    path = Path(path)
    with path.open("rb") as stream:
        try:
            data = yaml_fast.load(stream.read())
        except yaml.MarkedYAMLError as ex:
            mark = ex.problem_mark or ex.context_mark
            where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
            raise NetworkProblems(str(path), [f"{where}: {ex.problem or ex.context}"]) from None
    return data


@functools.cache
def _fast_check() -> Callable:
    """The network schema compiled to Python (fastjsonschema)."""
    import fastjsonschema

    # only pass or fail is read (jsonschema words the problems): without details it compiles ~2x faster
    return fastjsonschema.compile(network_schema(), detailed_exceptions=False)


def passes_fast(data) -> bool:
    """True when the compiled schema accepts ``data`` (then jsonschema does too)."""
    import fastjsonschema

    try:
        _fast_check()(data)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


def problems(data, source: str = "<network>") -> list[str]:
    """Every schema problem of ``data`` (a parsed network file), with names and suggestions."""
    if data is not None and not isinstance(data, dict):
        return [f"{source}: a network is a mapping of kinds ({', '.join(BY_KEY)}), not {type(data).__name__}"]
    # NOTE(tests): importing jsonschema costs over a second of CPU; only a refused file needs its wording
    found = [] if passes_fast(data) else _schema_problems(data, source)
    found.extend(_duplicates(data or {}, source))
    found.extend(_link_problems(data or {}, source))
    return found


def _schema_problems(data, source: str) -> list[str]:
    from jsonschema import Draft202012Validator

    found = []
    for error in sorted(Draft202012Validator(network_schema()).iter_errors(data), key=lambda e: list(e.path)):
        found.extend(_describe(error, data, source))
    return found


def _describe(error, data, source: str) -> list[str]:
    path = list(error.absolute_path)
    where = _where(path, data, source)
    if error.validator == "additionalProperties":
        known = list(error.schema.get("properties", {}))
        extras = sorted(set(error.instance) - set(known))
        what = "kind" if len(path) == 0 else "field"
        return [f"{where}: unknown {what} {extra!r}{_did_you_mean(extra, known)}" for extra in extras]
    if error.validator == "enum":
        allowed = ", ".join(str(v) for v in error.validator_value if v is not None)
        return [f"{where}: {error.instance!r} is not one of {allowed}"]
    return [f"{where}: {error.message}"]


def _where(path: list, data, source: str) -> str:
    """``file: identities/alice: roleAttributes`` from a JSON path."""
    if len(path) < 2:
        return f"{source}: {path[0]}" if path else source
    key, index, *rest = path
    item = data[key][index] if isinstance(data.get(key), list) else {}
    name = item.get("name") if isinstance(item, dict) else None
    entity = f"{key}/{name}" if isinstance(name, str) else f"{key}[{index}]"
    return f"{source}: {entity}" + (f": {'.'.join(str(p) for p in rest)}" if rest else "")


def _did_you_mean(word: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _duplicates(data: dict, source: str) -> list[str]:
    found = []
    for key, items in data.items():
        seen: set = set()
        for item in items if isinstance(items, list) else []:  # other shapes are schema problems
            name = item.get("name") if isinstance(item, dict) else None
            if not isinstance(name, str):
                continue
            if name in seen:
                found.append(f"{source}: {key}/{name}: the name is declared twice")
            seen.add(name)
    return found


def _link_problems(data: dict, source: str) -> list[str]:
    """``links:`` name other process routers of the file (a link joins two routers the harness runs)."""
    items = data.get("edgeRouters")
    routers = (
        [i for i in items if isinstance(i, dict) and isinstance(i.get("name"), str)] if isinstance(items, list) else []
    )
    processes = {item["name"] for item in routers if item.get("process") is True}
    declared = {item["name"] for item in routers} - processes
    found = []
    for item in routers:
        links, name = item.get("links"), item["name"]
        links = [other for other in links if isinstance(other, str)] if isinstance(links, list) else []
        if not links:
            continue  # other shapes are schema problems
        where = f"{source}: edgeRouters/{name}: links"
        if item.get("process") is not True:
            found.append(f"{where}: only a router with process: true is started, so only it can expect links")
            continue
        for other in dict.fromkeys(links):
            if other == name:
                found.append(f"{where}: a router is not linked to itself; name another process router")
            elif other in declared:
                found.append(f"{where}: {other!r} is not run by the harness: declare it with process: true")
            elif other not in processes:
                known = sorted(processes)
                found.append(f"{where}: no router with process: true named {other!r}" + _did_you_mean(other, known))
        if len(set(links)) != len(links):
            found.append(f"{where}: a router is named twice")
    return found


# -- references -------------------------------------------------------------------


def references(entities: dict[str, list[dict]]) -> Iterable[tuple[str, str, str, str, str]]:
    """Every name reference: ``(kind key, entity name, field, target kind key, target name)``."""
    for kind in KINDS:
        for item in entities.get(kind.key) or []:
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                continue  # reported by the schema check
            for field_name, ref in kind.refs.items():
                value = item.get(field_name)
                for target in _strings(value if ref.many else [value]):
                    yield kind.key, item["name"], field_name, ref.kind, target
            for field_name, target_kind in kind.roles.items():
                for role in _strings(item.get(field_name)):
                    if role.startswith("@"):
                        yield kind.key, item["name"], field_name, target_kind, role[1:]


def _strings(value) -> list[str]:
    return [v for v in value if isinstance(v, str) and v] if isinstance(value, list) else []


def unresolved(
    entities: dict[str, list[dict]], source: str, existing: Callable[[str], set[str]] | None = None
) -> list[str]:
    """References naming nothing in the file (nor, given ``existing``, on the controller)."""
    declared = {
        key: {item.get("name") for item in items or [] if isinstance(item, dict)} - {None}
        for key, items in entities.items()
        if key in BY_KEY
    }
    declared.setdefault("configTypes", set()).update(BUILT_IN_CONFIG_TYPES)
    missing = [r for r in references(entities) if r[4] not in declared.get(r[3], set())]
    on_controller: dict[str, set[str]] = {}
    found = []
    for key, name, field_name, target_kind, target in missing:
        if existing is not None:
            if target_kind not in on_controller:
                on_controller[target_kind] = existing(target_kind)
            if target in on_controller[target_kind]:
                continue
        known = declared.get(target_kind, set()) | on_controller.get(target_kind, set())
        found.append(
            f"{source}: {key}/{name}: {field_name}: no {target_kind} named {target!r}" + _did_you_mean(target, known)
        )
    return found


def names_on(client) -> Callable[[str], set[str]]:
    """A lookup of the names a controller holds per kind (listed on first use)."""
    from harness.network import _current

    return lambda key: set(_current(client, BY_KEY[key]))


def check_file(path: str | Path, client=None):
    """Parse and check a network file: schema and references, every problem at once."""
    from harness.network import Network

    source = str(path)
    data = parse(path)
    found = problems(data, source)
    if isinstance(data, dict):
        found += unresolved(data, source, names_on(client) if client is not None else None)
    if found:
        raise NetworkProblems(source, found)
    network = Network.from_dict(data)
    network.source = source
    return network


def check(entities: dict[str, list[dict]], source: str, client=None) -> None:
    """Raise :class:`NetworkProblems` unless every reference resolves."""
    found = unresolved(entities, source, names_on(client) if client is not None else None)
    if found:
        raise NetworkProblems(source, found)


# -- applying ---------------------------------------------------------------------


class ApplyInterrupted(NetworkError):
    """An apply stopped part-way (server error, Ctrl-C): re-running it finishes the job."""

    def __init__(self, done: int, total: int, cause: BaseException):
        self.done, self.total, self.cause = done, total, cause
        if isinstance(cause, KeyboardInterrupt) and str(cause):  # stopped waiting: the count is not known
            super().__init__(f"interrupted before the controller answered: {cause}; re-run to finish (idempotent)")
            return
        reason = "interrupted" if isinstance(cause, KeyboardInterrupt) else f"{type(cause).__name__}: {cause}"
        if done >= total:  # every entity went through; what was left (the controller's answer, pruning) was not
            super().__init__(
                f"all {total} entities applied, then {reason}; nothing is left to apply (with --prune, re-run to "
                "finish deleting)"
            )
            return
        super().__init__(f"{done} of {total} entities applied, then {reason}; re-run to finish (apply is idempotent)")


class Tally:
    """Counts the entities an apply has gone through, with an optional progress bar.

    Leaving it on an exception raises :class:`ApplyInterrupted` (how far it got).
    """

    def __init__(self, network, show: bool = False):
        self.total = sum(len(items) for items in network.entities.values())
        self.done = 0
        self._bar = None
        if show:
            from tqdm import tqdm

            # disable=None: no bar when standard error is not a terminal (a log, a pipe, CI)
            self._bar = tqdm(total=self.total, desc="apply", unit="entity", leave=False, disable=None)

    def update(self, count: int = 1) -> None:
        self.done += count
        if self._bar is not None:
            self._bar.update(count)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "Tally":
        return self

    def __exit__(self, kind, ex, tb) -> None:
        self.close()
        if ex is not None and not isinstance(ex, NetworkError):
            raise ApplyInterrupted(self.done, self.total, ex) from ex


# -- the kept schema ----------------------------------------------------------------

SCHEMA_MODULE = Path(__file__).with_name("schema.py")


def schema_module_text(schema: dict) -> str:
    """The source of ``harness/network/schema.py`` holding ``schema``."""
    import pprint

    return (
        '"""The JSON Schema of a network file, derived by ``harness.network.check.derive_network_schema``.\n\n'
        "Written by ``python -m harness.network.opgen``; tests/unit/test_netcheck.py fails when the route table's\n"
        'request schemas or the kinds say otherwise. Do not edit.\n"""\n\n'
        f"SCHEMA = {pprint.pformat(schema, width=120, sort_dicts=False)}\n"
    )
