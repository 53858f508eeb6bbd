"""Snapshots in the line layout load chunk by chunk to exactly what was written, with strings shared."""

from __future__ import annotations

from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.store import journal, snapshots
from controller.store.compact import Sharing
from tests.sizes import examples

# Text that could fool a splitter: newlines, quotes, braces, commas and the layout's own lines.
AWKWARD = st.text(alphabet=st.sampled_from(list('ab\n"{},:\\ é')), max_size=12) | st.sampled_from(
    ['},"t":{', '"k":{},', "}}", "\n}}\n", "{"]
)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | AWKWARD,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(AWKWARD, inner, max_size=3),
    max_leaves=8,
)
RECORDS = st.dictionaries(AWKWARD, VALUES, max_size=5)
TABLES = st.dictionaries(AWKWARD.filter(bool), st.dictionaries(AWKWARD, RECORDS, min_size=1, max_size=6), max_size=4)


def write(folder: Path, tables: dict, part_records: int) -> Path:
    """A snapshot as a compaction writes it: part files, then joined."""
    snapshot = folder / journal.snapshot_name(3)

    def replace(where, name, write_to, fsync):
        with open(where / name, "wb") as handle:
            write_to(handle)

    parts = snapshots.write_parts(folder, 3, tables, per_part=part_records, fsync=False, replace=replace)
    with open(snapshot, "wb") as handle:
        snapshots.join_parts(handle, folder, 3, parts)
    return snapshot


@settings(max_examples=examples(150, 25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TABLES, st.integers(1, 4), st.integers(1, 200))
def test_a_joined_snapshot_loads_in_chunks_to_what_was_written(tmp_path, monkeypatch, tables, per_part, chunk):
    monkeypatch.setattr(snapshots, "CHUNK_BYTES", chunk)
    for stale in tmp_path.iterdir():
        stale.unlink()
    path = write(tmp_path, tables, per_part)
    assert orjson.loads(path.read_bytes()) == tables  # still plain TinyDB JSON
    lines = snapshots.load_lines(path.read_bytes(), snapshots.unshared)
    assert lines == tables or (not tables and lines is None)  # "{}": no lines to read, parsed whole
    assert journal.load_snapshot(path, Sharing().record) == tables


@settings(max_examples=examples(100, 20), deadline=None)
@given(TABLES)
def test_a_copy_loads_in_chunks_and_an_old_one_line_snapshot_still_loads(tables):
    from io import BytesIO

    copy = BytesIO()
    journal._dump_tables(copy, tables)
    wanted = {name: docs for name, docs in tables.items() if docs}
    assert snapshots.load_lines(copy.getvalue(), snapshots.unshared) == (wanted if tables else None)
    assert snapshots.load_lines(orjson.dumps(tables), snapshots.unshared) is None or not tables  # the old layout


def test_shared_records_hold_one_string_per_repeated_value(tmp_path):
    now = "2026-01-01T00:00:00.000Z"
    tables = {
        "identities": {
            f"i{n}": {"id": f"i{n}", "created_at": now, "updated_at": now, "type_id": "Default", "roles": ["a"]}
            for n in range(50)
        }
    }
    loaded = journal.load_snapshot(write(tmp_path, tables, 7), Sharing().record)
    records = list(loaded["identities"].values())
    assert loaded == tables
    assert len({id(r["type_id"]) for r in records}) == 1 and len({id(r["roles"][0]) for r in records}) == 1
    assert all(r["updated_at"] is r["created_at"] for r in records)
    assert all(key is record["id"] for key, record in loaded["identities"].items())
