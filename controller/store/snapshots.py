"""Snapshots written in parts, so a compaction killed half-way resumes where it stopped.

A snapshot covering the segments below ``upto`` is first written as part files
(``snapshot-00000007.part-000003``), each a sorted slice of one table's records
made durable on its own; then the parts are joined into the snapshot proper
(one TinyDB JSON file) and retired. The slices are a pure function of the
tables at ``upto``, which a restart rebuilds exactly (older snapshot plus the
segments below ``upto``), so a process killed more often than a whole snapshot
takes still gets further each run: start-up never faces an ever-growing journal.

Part file: a header line ``[table, count, first key, last key]``, then the
records as one JSON object. A part whose header differs from the plan (other
records, another part size) is written again.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

import orjson

PART_RECORDS = 5000  # records per part: one part is tens of milliseconds of work
PART_RE = re.compile(r"snapshot-(\d{8})\.part-(\d{6})")

Tables = dict[str, dict[str, dict]]
Plan = list[tuple[str, list[str]]]
Replace = Callable[[Path, str, Callable, bool], None]


def part_name(upto: int, index: int) -> str:
    return f"snapshot-{upto:08d}.part-{index:06d}"


def plan(tables: Tables, per_part: int) -> Plan:
    """(table, keys) of each part, in order: tables by name, keys sorted."""
    parts: Plan = []
    for name in sorted(tables):
        keys = sorted(tables[name])
        parts += [(name, keys[start : start + per_part]) for start in range(0, len(keys), per_part)]
    return parts


def write_parts(folder: Path, upto: int, tables: Tables, *, per_part: int, fsync: bool, replace: Replace) -> Plan:
    """Write every part not already on disk; returns the plan."""
    parts = plan(tables, per_part)
    for index, (table, keys) in enumerate(parts):
        name, head = part_name(upto, index), _header(table, keys)
        if _first_line(folder / name) == head:
            continue  # written by an earlier run that was killed before the snapshot was done
        docs = tables[table]
        body = orjson.dumps({key: docs[key] for key in keys})
        replace(folder, name, lambda handle, data=head + body: handle.write(data), fsync)
    return parts


def join_parts(handle, folder: Path, upto: int, parts: Plan) -> None:
    """Write the TinyDB JSON of the whole snapshot from its parts."""
    handle.write(b"{")
    current, empty = None, True
    for index, (table, _keys) in enumerate(parts):
        data = (folder / part_name(upto, index)).read_bytes()
        records = data[data.index(b"\n") + 1 :].strip()[1:-1]
        if table != current:
            handle.write((b"}," if current is not None else b"") + orjson.dumps(table) + b":{")
            current, empty = table, True
        if records:
            handle.write((b"" if empty else b",") + records)
            empty = False
    handle.write(b"}}" if current is not None else b"}")


def _header(table: str, keys: list[str]) -> bytes:
    return orjson.dumps([table, len(keys), keys[0], keys[-1]]) + b"\n"


def _first_line(path: Path) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.readline()
    except FileNotFoundError:
        return None
