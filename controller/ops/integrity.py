"""Data integrity check and fix: one background run at a time across both.

The check walks every registered :class:`Reference` (a record field naming a
record of another table) and reports each one that names nothing, plus
records whose stored key and ``id`` differ and duplicate names in tables with
unique names. A fix run snapshots the database first, then repairs what it
can in one transaction: dangling owners delete the record (running its
cascades), optional references are cleared, dangling list entries removed.
The references are the ones ``controller/entities.py`` declares.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from controller.clock import Clock, rfc3339
from controller.entities import DELETE, REMOVE_ITEM, references, role_references, target_table
from controller.errors import ControllerError, RateLimited
from controller.model.base import snake
from controller.model.cascades import Cascades, with_path
from controller.ops.database import Database
from controller.policy.sync import PolicySync
from controller.store.db import Store

log = logging.getLogger("controller.integrity")

MAX_RESULTS = 1000


@dataclass(frozen=True)
class Reference:
    """``table.field`` (dotted for nested keys) names a record of ``target``."""

    table: str
    field: str
    target: str
    fix: str = DELETE
    #: the value CLEAR writes
    cleared: object = None


#: every declared reference (``controller/entities.py``), with its repair
CORE_REFERENCES = tuple(
    Reference(table, ref.field, target_table(ref), ref.fix, ref.cleared) for table, ref in references()
)
#: role lists whose ``@id`` entries must name existing entities: (table, field, target table)
ROLE_REFERENCES = tuple((table, snake(wire), target.table) for table, wire, target in role_references())


@dataclass
class Problem:
    description: str
    repair: Callable[[], None] | None = None
    fixed: bool = False


def _get(record: dict, path: str):
    value = record
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


class Integrity:
    def __init__(
        self,
        *,
        store: Store,
        clock: Clock,
        cascades: Cascades,
        policy: PolicySync,
        database: Database,
        events,
        unique_name_tables: Iterable[str],
    ):
        """``unique_name_tables``: the tables whose names must be unique (checked for duplicates)."""
        self.store, self.clock, self.cascades, self.policy = store, clock, cascades, policy
        self.database, self.events = database, events
        self.unique_name_tables = tuple(dict.fromkeys(unique_name_tables))
        self.references = CORE_REFERENCES
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._state = {
            "in_progress": False,
            "fixing_errors": False,
            "start_time": None,
            "end_time": None,
            "error": None,
            "too_many_errors": False,
            "results": [],
        }

    # -- runs -----------------------------------------------------------------
    def start(self, fix: bool) -> None:
        """Start a check (or fix) in the background; 429 RATE_LIMITED while one runs."""
        with self._lock:
            if self._state["in_progress"]:
                raise RateLimited(message="a data integrity check or fix is already in progress")
            self._state = {
                "in_progress": True,
                "fixing_errors": fix,
                "start_time": rfc3339(self.clock.now()),
                "end_time": None,
                "error": None,
                "too_many_errors": False,
                "results": [],
            }
            self._thread = threading.Thread(target=self._run, args=(fix,), name="data-integrity", daemon=True)
            self._thread.start()

    def _run(self, fix: bool) -> None:
        results, too_many, error = [], False, None
        try:
            if fix:
                self.database.snapshot(force=True)
            results, too_many = self.run(fix)
        except ControllerError as ex:
            error = ex.message
        except Exception as ex:  # the state reports it; the thread must not die silently
            log.exception("data integrity run failed")
            error = f"{type(ex).__name__}: {ex}"
        with self._lock:
            self._state.update(
                in_progress=False,
                end_time=rfc3339(self.clock.now()),
                error=error,
                too_many_errors=too_many,
                results=results,
            )
        self.events.emit("database", "integrityFix" if fix else "integrityCheck", problems=len(results), error=error)

    def run(self, fix: bool) -> tuple[list[dict], bool]:
        """Check (and with ``fix`` repair) now, in this thread: ``(results, too_many_errors)``."""
        store = self.store
        with store.lock:
            problems = []
            for problem in self.problems():
                if len(problems) == MAX_RESULTS:
                    return self._results(problems, fix), True
                problems.append(problem)
            return self._results(problems, fix), False

    def _results(self, problems: list[Problem], fix: bool) -> list[dict]:
        if fix and any(p.repair for p in problems):
            with self.store.transaction():
                for problem in problems:
                    if problem.repair is not None:
                        problem.repair()
                        problem.fixed = True
        return [{"description": p.description, "fixed": p.fixed} for p in problems]

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the current run; True when none is running afterwards."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return not self._state["in_progress"]

    def close(self) -> None:
        self.join(timeout=30)

    # -- checks ---------------------------------------------------------------
    def problems(self) -> Iterator[Problem]:
        """Every inconsistency of the store (the caller holds the store lock)."""
        yield from self._key_mismatches()
        for reference in self.references:
            yield from self._dangling(reference)
        yield from self._duplicate_names()
        yield from self._dangling_role_entries()
        yield from self._policy_links()

    def _dangling_role_entries(self) -> Iterator[Problem]:
        """``@id`` role entries naming entities that no longer exist."""
        store = self.store
        for table, field, target in ROLE_REFERENCES:
            for record in store.all(table):
                bad = [r for r in record.get(field) or [] if r.startswith("@") and store.get(target, r[1:]) is None]
                if bad:
                    kept = [r for r in record[field] if r not in bad]
                    yield Problem(
                        f"{table} {record['id']} {field} names missing {target}: {', '.join(bad)}",
                        lambda t=table, r=record, f=field, k=kept: store.put(t, r["id"], {**r, f: k}),
                    )

    def _policy_links(self) -> Iterator[Problem]:
        """The policy-derived links, recomputed from scratch and compared with the engine's."""
        found = self.policy.differences()
        if found:
            yield Problem(f"policy-derived links out of step ({len(found)}): {found[0]}", self.policy.rebuild)

    def _key_mismatches(self) -> Iterator[Problem]:
        store = self.store
        for table in store.tables():
            for doc in store.table(table).all():
                key, record = doc.doc_id, dict(doc)
                if record.get("id") != key:
                    yield Problem(
                        f"{table} record stored under key {key} has id {record.get('id')}",
                        lambda t=table, k=key, r=record: store.put(t, k, {**r, "id": k}),
                    )

    def _dangling(self, ref: Reference) -> Iterator[Problem]:
        store = self.store
        for record in list(store.values(ref.table)):
            value = _get(record, ref.field)
            if value is None or value == "":
                continue
            if ref.fix == REMOVE_ITEM:
                if not isinstance(value, list):
                    continue
                missing = [item for item in value if store.get(ref.target, item) is None]
                if missing:
                    kept = [item for item in value if item not in missing]
                    yield Problem(
                        f"{ref.table} {record['id']} field {ref.field} references missing "
                        f"{ref.target} {', '.join(missing)}",
                        self._writer(ref, record, kept),
                    )
            elif store.get(ref.target, value) is None:
                description = f"{ref.table} {record['id']} field {ref.field} references missing {ref.target} {value}"
                repair = (
                    self._deleter(ref.table, record["id"])
                    if ref.fix == DELETE
                    else self._writer(ref, record, ref.cleared)
                )
                yield Problem(description, repair)

    def _writer(self, ref: Reference, record: dict, value) -> Callable[[], None]:
        def repair() -> None:
            current = self.store.get(ref.table, record["id"])
            if current is not None:
                self.store.put(ref.table, record["id"], with_path(current, ref.field, value))

        return repair

    def _deleter(self, table: str, key: str) -> Callable[[], None]:
        def repair() -> None:
            current = self.store.get(table, key)
            if current is not None:
                self.cascades.run(table, current)
                self.store.delete(table, key)

        return repair

    def _duplicate_names(self) -> Iterator[Problem]:
        for table in self.unique_name_tables:
            seen: dict[str, str] = {}
            for record in self.store.values(table):
                name = record.get("name")
                if name in seen:
                    yield Problem(f"{table} {record['id']} and {seen[name]} share the unique name {name!r}")
                elif name is not None:
                    seen[name] = record["id"]

    # -- view ------------------------------------------------------------------
    def view(self) -> dict:
        with self._lock:
            state = dict(self._state)
        return {
            "inProgress": state["in_progress"],
            "fixingErrors": state["fixing_errors"],
            "startTime": state["start_time"],
            "endTime": state["end_time"],
            "error": state["error"],
            "tooManyErrors": state["too_many_errors"],
            "results": list(state["results"]),
        }
