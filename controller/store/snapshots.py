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

Line layout: snapshots put each record on a line of its own (JSON whitespace,
so the file stays plain TinyDB JSON). JSON strings never hold a raw newline, so
every newline is a record boundary, and a snapshot loads a chunk of records at
a time (:func:`load_lines`): the store shares each chunk's strings before the
next is parsed, so the copies it drops are reused instead of piling up.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Iterable

import orjson

PART_RECORDS = 5000  # records per part: one part is tens of milliseconds of work
CHUNK_BYTES = 4 << 20  # records parsed at once while loading a snapshot in the line layout
PART_RE = re.compile(r"snapshot-(\d{8})\.part-(\d{6})")

Tables = dict[str, dict[str, dict]]
Plan = list[tuple[str, list[str]]]
Replace = Callable[[Path, str, Callable, bool], None]
Share = Callable[[str, dict], tuple[str, dict]]  # (key, fresh record) -> the (key, record) to keep


def unshared(key: str, doc: dict) -> tuple[str, dict]:
    return key, doc


def record_lines(docs: dict[str, dict], keys: Iterable[str]) -> bytes:
    """``"key":{record}`` of each key, one per line, comma-separated (the line layout)."""
    return b",\n".join(orjson.dumps(key) + b":" + orjson.dumps(docs[key]) for key in keys)


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
        body = b"{\n" + record_lines(tables[table], keys) + b"\n}"
        replace(folder, name, lambda handle, data=head + body: handle.write(data), fsync)
    return parts


def join_parts(handle, folder: Path, upto: int, parts: Plan) -> None:
    """Write the TinyDB JSON of the whole snapshot from its parts."""
    handle.write(b"{")
    current, empty = None, True
    for index, (table, _keys) in enumerate(parts):
        data = (folder / part_name(upto, index)).read_bytes()
        records = data[data.index(b"\n") + 1 :].strip()[1:-1].strip(b"\n")
        if table != current:
            handle.write((b"\n}," if current is not None else b"") + orjson.dumps(table) + b":{")
            current, empty = table, True
        if records:
            handle.write((b"\n" if empty else b",\n") + records)
            empty = False
    handle.write(b"\n}}" if current is not None else b"}")


def load_lines(data: bytes, share: Share) -> Tables | None:
    """The tables of a snapshot in the line layout, ``share``d chunk by chunk; None if not in it.

    Lines: ``{"table":{`` or ``},"table":{`` open a table, ``"key":{...},`` is a
    record, ``}}`` ends the file. Anything else (an older snapshot, written as one
    line) gives None, and the caller parses the file whole.
    """
    tables: Tables = {}
    current: dict[str, dict] | None = None
    start, end = 0, len(data)
    while start < end:
        stop = data.find(b"\n", min(start + CHUNK_BYTES, end))
        stop = end if stop < 0 else stop
        batch: list[bytes] = []
        for line in data[start:stop].split(b"\n"):
            if line.startswith(b'"') and current is not None:
                batch.append(line)
                continue
            if not _add_records(current, batch, share):
                return None
            batch = []
            if line == b"}}" and stop == end:
                return {name: docs for name, docs in tables.items() if docs}
            current = _opened_table(line, tables)
            if current is None:
                return None
        if not _add_records(current, batch, share):
            return None
        start = stop + 1
    return None  # no closing line: not the line layout


def _opened_table(line: bytes, tables: Tables) -> dict[str, dict] | None:
    """The table a ``{"name":{`` / ``},"name":{`` line opens (added to ``tables``), else None."""
    head = line[1:] if line.startswith(b"{") and not tables else line[2:] if line.startswith(b"},") else None
    if head is None or not head.endswith(b":{"):
        return None
    try:
        name = orjson.loads(head[:-2])
    except orjson.JSONDecodeError:
        return None
    if not isinstance(name, str) or name in tables:
        return None
    return tables.setdefault(name, {})


def _add_records(docs: dict[str, dict] | None, lines: list[bytes], share: Share) -> bool:
    """Parse ``lines`` into ``docs``; False if they are not records (the caller parses the file whole)."""
    if not lines:
        return True
    try:
        parsed = orjson.loads(b"{" + b"".join(lines).rstrip(b",") + b"}")
    except orjson.JSONDecodeError:
        return False
    if not all(type(doc) is dict for doc in parsed.values()):
        return False
    for key, doc in parsed.items():
        key, doc = share(key, doc)
        docs[key] = doc
    return True


def _header(table: str, keys: list[str]) -> bytes:
    return orjson.dumps([table, len(keys), keys[0], keys[-1]]) + b"\n"


def _first_line(path: Path) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.readline()
    except FileNotFoundError:
        return None
