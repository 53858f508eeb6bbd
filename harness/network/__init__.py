"""Networks as code: declare a network by names and attributes, never by ids.

A network is a dict (or YAML) with one list per kind (see ``harness.client.kinds``):

.. code-block:: yaml

    identities:
      - {name: alice, roleAttributes: [sales], enrollment: {ott: true}}
    services:
      - {name: crm, roleAttributes: [web], configs: [crm-intercept]}
    servicePolicies:
      - {name: sales-dial, type: Dial, identityRoles: ["#sales", "@alice"], serviceRoles: ["#web"]}

``apply`` makes a controller match it (create, update, optionally prune the
rest), idempotently, with a dry run that only plans; ``export`` reads a running
controller back into one; ``diff`` compares two.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from controller.gc_pause import gc_paused
from harness.client.kinds import BY_KEY, KINDS, Kind, canonical
from harness.network import apply_fast, yaml_fast


class NetworkError(ValueError):
    """A network file that cannot be applied as written."""


@dataclass
class Step:
    kind: str
    action: str  # create | update | delete
    name: str
    changes: dict = field(default_factory=dict)

    def __str__(self) -> str:
        detail = f" {sorted(self.changes)}" if self.action == "update" else ""
        return f"{self.action:<6} {self.kind}/{self.name}{detail}"


@dataclass
class Network:
    """A declared network: ``{kind key: [entity dicts]}``."""

    entities: dict[str, list[dict]]
    tests: list[dict] = field(default_factory=list)  # access tests (see harness.analysis.access_tests)
    #: controllers ``ziti-harness up`` runs, as one cluster when more than one
    controllers: int = 1
    #: where it was read from, for messages
    source: str = "<network>"

    @classmethod
    def from_dict(cls, data: dict | None, *, owned: bool = False) -> "Network":
        """A network of ``data`` (copied, unless ``owned``: then the network keeps it)."""
        data = dict(data or {}) if owned else copy.deepcopy(data or {})
        tests = data.pop("tests", None)
        controllers = data.pop("controllers", None)
        controllers = 1 if controllers is None else controllers
        if not isinstance(controllers, int) or isinstance(controllers, bool) or controllers < 1:
            raise NetworkError(f"controllers must be a whole number of at least 1, not {controllers!r}")
        if (
            tests is not None
        ):  # access tests (harness.analysis.access_tests), checked here so that apply never starts on a bad one
            from harness.analysis.access_tests import validate_tests

            validate_tests(tests)
        unknown = set(data) - set(BY_KEY)
        if unknown:
            raise NetworkError(f"unknown kinds {sorted(unknown)}; known: {sorted(BY_KEY)}")
        for key, items in data.items():
            names = [item.get("name") for item in items or []]
            if any(not isinstance(name, str) or not name for name in names):
                raise NetworkError(f"every {key} entry needs a name")
            if len(names) != len(set(names)):
                raise NetworkError(f"duplicate names in {key}")
        return cls(
            {key: list(data.get(key) or []) for key in BY_KEY if data.get(key)}, tests or [], controllers=controllers
        )

    @classmethod
    def from_yaml(cls, source: str | Path) -> "Network":
        """Parse YAML text or a file, checked against the network schema (every problem at once)."""
        from harness.network import check as netcheck

        is_file = isinstance(source, Path) or ("\n" not in source and Path(source).exists())
        with gc_paused():
            data = netcheck.parse(source) if is_file else yaml_fast.load(source)
            return cls.checked(data, str(source) if is_file else "<network>", owned=True)

    @classmethod
    def checked(cls, data, source: str = "<network>", *, owned: bool = False) -> "Network":
        """``from_dict`` after checking ``data`` against the network schema."""
        from harness.network import check as netcheck

        found = netcheck.problems(data, source)
        if found:
            raise netcheck.NetworkProblems(source, found)
        network = cls.from_dict(data, owned=owned)
        network.source = source
        return network

    def to_dict(self) -> dict:
        return {key: copy.deepcopy(items) for key, items in self.entities.items() if items}

    def to_yaml(self) -> str:
        tests = {"tests": copy.deepcopy(self.tests)} if self.tests else {}
        return yaml.safe_dump({**self.to_dict(), **tests}, sort_keys=False, allow_unicode=True)

    def names(self, key: str) -> list[str]:
        return [item["name"] for item in self.entities.get(key, [])]

    def process_routers(self) -> list[dict]:
        """The edge routers declared ``process: true``: ``ziti-harness up`` runs them as processes."""
        return [item for item in self.entities.get("edgeRouters", []) if item.get("process") is True]

    def expected_links(self) -> set[frozenset[str]]:
        """The router name pairs a file's ``links:`` expect linked (either direction)."""
        return {frozenset((item["name"], other)) for item in self.process_routers() for other in item.get("links", [])}


# -- reading a controller -------------------------------------------------------


def _served(kind: Kind) -> bool:
    from harness.client.operations import OPERATIONS

    return kind.list_op in OPERATIONS["management"]


def _current(client, kind: Kind) -> dict[str, dict]:
    if not _served(kind):
        return {}
    return {record["name"]: record for record in client.management.iterate(kind.list_op, page_size=500)}


class _Resolver:
    """Name <-> id maps per kind, filled as the apply goes."""

    def __init__(self):
        self.ids: dict[str, dict[str, str]] = {kind.key: {} for kind in KINDS}

    def learn(self, key: str, records: dict[str, dict]) -> None:
        self.ids[key].update({name: record["id"] for name, record in records.items()})

    def id_of(self, key: str, name: str, dry_run: bool) -> str:
        if name in self.ids[key]:
            return self.ids[key][name]
        if dry_run:
            return f"<{name}>"
        raise NetworkError(f"{key} named {name!r} does not exist")

    def name_of(self, key: str, entity_id: str) -> str | None:
        for name, known in self.ids[key].items():
            if known == entity_id:
                return name
        return None


def _desired_body(kind: Kind, item: dict, resolver: _Resolver, dry_run: bool) -> dict:
    body = {"name": item["name"]}
    for name in kind.fields:
        if name in item:
            body[name] = copy.deepcopy(item[name])
    if "tags" in item:
        body["tags"] = item["tags"]
    for name, ref in kind.refs.items():
        if name in item:
            value = item[name]
            body[ref.wire] = (
                [resolver.id_of(ref.kind, v, dry_run) for v in value]
                if ref.many
                else resolver.id_of(ref.kind, value, dry_run)
            )
    for name, target in kind.roles.items():
        if name in item:
            body[name] = sorted(_role_to_id(role, target, resolver, dry_run) for role in item[name])
    return body


def _role_to_id(role: str, target: str, resolver: _Resolver, dry_run: bool) -> str:
    if role.startswith("@"):
        return "@" + resolver.id_of(target, role[1:], dry_run)
    return role


def _changed(kind: Kind, body: dict, current: dict) -> dict:
    changes = {}
    for key, value in body.items():
        have = current.get(key)
        if key in kind.equivalent:
            same = kind.equivalent[key](value, current)
        elif isinstance(value, list) and isinstance(have, list) and key.endswith("Roles"):
            same = sorted(value) == sorted(have)
        else:
            same = value == have
        if not same:
            changes[key] = value
    return changes


def plan_and_apply(
    client, network: Network, *, prune: bool = False, dry_run: bool = False, progress: bool = False
) -> list[Step]:
    """Make the controller match ``network``; return the steps taken (or planned, when ``dry_run``)."""
    resolver = _Resolver()
    currents: dict[str, dict[str, dict]] = {}
    for kind in KINDS:
        if network.entities.get(kind.key) and not _served(kind):
            raise NetworkError(f"this controller does not serve {kind.key}")
        currents[kind.key] = _current(client, kind)
        resolver.learn(kind.key, currents[kind.key])
    if not dry_run:  # entities created in this apply are referred to by pending ids until they exist
        for kind in KINDS:
            resolver.ids[kind.key].update(
                {
                    name: apply_fast.pending_id(kind.key, name)
                    for name in network.names(kind.key)
                    if name not in currents[kind.key]
                }
            )
    steps: list[Step] = []
    creates: list[apply_fast.Create] = []
    patches: list[apply_fast.Patch] = []
    for kind in KINDS:
        for item in network.entities.get(kind.key, []):
            step = _plan_one(kind, item, currents[kind.key].get(item["name"]), resolver, dry_run)
            if step is None:
                continue
            steps.append(step)
            if step.action == "create":
                creates.append(apply_fast.Create(kind, item["name"], step.changes, _after_create(kind, item)))
            else:
                patches.append(apply_fast.Patch(kind, currents[kind.key][item["name"]]["id"], step.changes))
    if not dry_run:
        bar = progress if hasattr(progress, "update") else (_progress(network) if progress else None)
        created = apply_fast.execute(client, creates, patches, tick=bar.update if bar else lambda n: None)
        if bar is not None:
            bar.close()
        for step in steps:
            step.changes = apply_fast.resolve(step.changes, created)
    if prune:
        steps += _prune(client, network, currents, dry_run)
    return steps


def _plan_one(kind: Kind, item: dict, current: dict | None, resolver: _Resolver, dry_run: bool) -> Step | None:
    body = _desired_body(kind, item, resolver, dry_run)
    if current is None:
        create = {**kind.defaults, **body, **{k: item[k] for k in kind.create_only if k in item}}
        return Step(kind.key, "create", item["name"], create)
    changes = _changed(kind, body, current)
    return Step(kind.key, "update", item["name"], changes) if changes else None


def _after_create(kind: Kind, item: dict) -> list[tuple[str, dict]]:
    """``password:`` on an identity is a shorthand for its updb authenticator."""
    if kind.key == "identities" and item.get("password"):
        return [
            (
                "createAuthenticator",
                {
                    "identityId": apply_fast.pending_id(kind.key, item["name"]),
                    "method": "updb",
                    "username": item.get("username", item["name"]),
                    "password": item["password"],
                },
            )
        ]
    return []


def _prune(client, network: Network, currents: dict, dry_run: bool) -> list[Step]:
    steps = []
    for kind in reversed(KINDS):
        wanted = set(network.names(kind.key))
        for name, record in sorted(currents[kind.key].items()):
            if name in wanted or kind.system(record):
                continue
            if not dry_run:
                client.management.call(kind.delete_op, record["id"])
            steps.append(Step(kind.key, "delete", name))
    return steps


def _progress(network: Network):
    from tqdm import tqdm

    total = sum(len(items) for items in network.entities.values())
    return tqdm(total=total, desc="apply", unit="entity", leave=False, disable=None)  # None: only on a terminal


def apply(
    client,
    network: Network | dict | str | Path,
    *,
    prune: bool = False,
    dry_run: bool = False,
    progress: bool = False,
    force: bool = False,
) -> list[Step]:
    """Apply a network (a Network, dict, YAML text or file path) to a controller.

    Args:
        client: a logged-in ``ZitiClient`` with admin rights.
        network: what the controller should hold.
        prune: delete entities the network does not name (never system ones).
        dry_run: plan only; nothing is written.
        progress: show a progress bar (for large networks).
        force: apply even when the network's access tests fail.

    Returns:
        The steps taken, or planned when ``dry_run``; empty when already in step.

    Raises:
        AccessTestsFailed: a ``tests:`` case fails on the network as it would be.
    """
    from harness.network.check import Tally, check

    with gc_paused():  # reading and planning build ~10 objects per entity, none in a cycle
        if not isinstance(network, Network):
            network = Network.from_yaml(network) if isinstance(network, (str, Path)) else Network.checked(network)
        check(network.entities, network.source, client)  # every reference resolves before the first write
        if network.tests and not force:
            from harness.analysis.access_tests import check_before_apply

            check_before_apply(client, network, prune=prune)
        with Tally(network, show=progress) as tally:
            return plan_and_apply(client, network, prune=prune, dry_run=dry_run, progress=tally)


def export(client) -> Network:
    """Read a running controller back into a network (system entities left out)."""
    resolver = _Resolver()
    records = {}
    for kind in KINDS:
        records[kind.key] = _current(client, kind)
        resolver.learn(kind.key, records[kind.key])
    out: dict[str, list[dict]] = {}
    for kind in KINDS:
        items = [
            _export_one(kind, record, resolver)
            for name, record in sorted(records[kind.key].items())
            if not kind.system(record)
        ]
        if items:
            out[kind.key] = items
    return Network(out)


def _export_one(kind: Kind, record: dict, resolver: _Resolver) -> dict:
    item: dict[str, Any] = {"name": record["name"]}
    for name in (*kind.fields, *kind.create_only):
        value = record.get(name)
        if name in kind.equivalent:
            value = record.get(name + "Id") if isinstance(value, dict) else value
        if value not in (None, [], {}, ""):
            item[name] = copy.deepcopy(value)
    for name, ref in kind.refs.items():
        value = record.get(ref.wire)
        if ref.many and value:
            item[name] = [resolver.name_of(ref.kind, v) or v for v in value]
        elif value and not (kind.key == "identities" and value == "default"):
            item[name] = resolver.name_of(ref.kind, value) or value
    for name, target in kind.roles.items():
        roles = record.get(name) or []
        item[name] = [("@" + (resolver.name_of(target, r[1:]) or r[1:])) if r.startswith("@") else r for r in roles]
    if record.get("tags"):
        item["tags"] = record["tags"]
    return {key: value for key, value in item.items() if key == "name" or key in canonical(kind, item)}


@dataclass
class Difference:
    kind: str
    name: str
    change: str  # added | removed | changed
    fields: dict = field(default_factory=dict)  # field -> (before, after)

    def __str__(self) -> str:
        detail = "".join(f"\n    {k}: {a!r} -> {b!r}" for k, (a, b) in sorted(self.fields.items()))
        return f"{self.change:<7} {self.kind}/{self.name}{detail}"


def diff(before: Network, after: Network) -> list[Difference]:
    """What changes from ``before`` to ``after``, by kind and name."""
    out: list[Difference] = []
    for kind in KINDS:
        old = {item["name"]: canonical(kind, item) for item in before.entities.get(kind.key, [])}
        new = {item["name"]: canonical(kind, item) for item in after.entities.get(kind.key, [])}
        for name in sorted(set(old) | set(new)):
            if name not in new:
                out.append(Difference(kind.key, name, "removed"))
            elif name not in old:
                out.append(Difference(kind.key, name, "added"))
            else:
                fields = {
                    k: (old[name].get(k), new[name].get(k))
                    for k in set(old[name]) | set(new[name])
                    if old[name].get(k) != new[name].get(k)
                }
                if fields:
                    out.append(Difference(kind.key, name, "changed", fields))
    return out


__all__ = ["Network", "NetworkError", "Step", "Difference", "apply", "export", "diff"]
