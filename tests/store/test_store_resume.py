"""A snapshot cut short by a kill is finished by the next run, not restarted; a failed one leaves no parts."""

from __future__ import annotations

import errno

import pytest
from tinydb import TinyDB

from controller.errors import Unavailable
from controller.store import journal
from controller.store.db import Store

PARTS = dict(compact_min_bytes=1 << 30, snapshot_part_records=10)


class Killed(BaseException):
    """The process dying mid-snapshot, as kill -9 would: nothing after it runs (no clean-up)."""


def files(folder, pattern):
    return sorted(path.name for path in folder.glob(pattern))


def fill(store, count, prefix="k"):
    with store.transaction():
        for index in range(count):
            store.put("t", f"{prefix}{index:03d}", {"id": f"{prefix}{index:03d}", "n": index})


def test_a_half_written_snapshot_is_finished_on_the_next_open(tmp_path, monkeypatch):
    real_replace, parts_written = journal._replace_atomically, []

    def replace_until_disk_full(folder, name, write, fsync):
        if ".part-" in name and len(parts_written) == 3:
            raise Killed
        parts_written.append(name)
        real_replace(folder, name, write, fsync)

    with Store(tmp_path, **PARTS) as store:
        fill(store, 100)
        monkeypatch.setattr(journal, "_replace_atomically", replace_until_disk_full)
        with pytest.raises(Killed):
            store.compact()
        monkeypatch.setattr(journal, "_replace_atomically", real_replace)
        fill(store, 5, prefix="later")  # after the cut: stays in the journal
    assert len(files(tmp_path, "snapshot-*.part-*")) == 3 and files(tmp_path, "snapshot-*.json") == []

    parts_written.clear()
    monkeypatch.setattr(journal, "_replace_atomically", _counting(real_replace, parts_written))
    with Store(tmp_path, **PARTS) as store:
        assert store.count("t") == 105
    assert len([name for name in parts_written if ".part-" in name]) == 7  # only the parts still missing
    [snapshot] = files(tmp_path, "snapshot-*.json")
    assert files(tmp_path, "snapshot-*.part-*") == []
    with TinyDB(tmp_path / snapshot, access_mode="r") as stock:
        assert len(stock.table("t")) == 100  # the snapshot covers what preceded its cut
    with Store(tmp_path, **PARTS) as store:
        assert store.count("t") == 105 and store.get("t", "later004") == {"id": "later004", "n": 4}


def _counting(real, names):
    def replace(folder, name, write, fsync):
        names.append(name)
        real(folder, name, write, fsync)

    return replace


def test_parts_from_another_part_size_are_written_again(tmp_path, monkeypatch):
    real_replace, written = journal._replace_atomically, []

    def fail_after_two_parts(folder, name, write, fsync):
        if ".part-" in name and len(written) == 2:
            raise Killed
        written.append(name)
        real_replace(folder, name, write, fsync)

    with Store(tmp_path, **PARTS) as store:
        fill(store, 30)
        monkeypatch.setattr(journal, "_replace_atomically", fail_after_two_parts)
        with pytest.raises(Killed):
            store.compact()
    written.clear()
    monkeypatch.setattr(journal, "_replace_atomically", _counting(real_replace, written))

    with Store(tmp_path, compact_min_bytes=1 << 30, snapshot_part_records=7) as store:
        assert store.count("t") == 30
    assert len([name for name in written if ".part-" in name]) == 5  # 30 records / 7: none reusable
    with Store(tmp_path) as store:
        assert {r["n"] for r in store.all("t")} == set(range(30))


def test_a_compaction_that_fails_on_a_full_disk_removes_its_part_files(tmp_path, monkeypatch, caplog):
    real_replace, written = journal._replace_atomically, []

    def disk_full_at_the_fourth_part(folder, name, write, fsync):
        if ".part-" in name and len(written) == 3:
            (folder / (name + ".tmp")).write_bytes(b"half a part")  # what the failed write left
            raise OSError(errno.ENOSPC, "No space left on device")
        written.append(name)
        real_replace(folder, name, write, fsync)

    with Store(tmp_path, **PARTS) as store:
        fill(store, 100)
        monkeypatch.setattr(journal, "_replace_atomically", disk_full_at_the_fourth_part)
        with pytest.raises(Unavailable):
            store.compact()
        assert files(tmp_path, "snapshot-*") == []  # the space the parts took is back
        assert "the snapshot could not be written; removed the 4 part files it left" in caplog.text
        monkeypatch.setattr(journal, "_replace_atomically", real_replace)
        fill(store, 5, prefix="later")
        store.compact()  # room again: a whole snapshot, written from scratch
        assert len(files(tmp_path, "snapshot-*.json")) == 1 and files(tmp_path, "snapshot-*.part-*") == []
    with Store(tmp_path, **PARTS) as store:
        assert store.count("t") == 105


def test_part_files_that_no_snapshot_will_use_are_removed_at_start(tmp_path):
    with Store(tmp_path, **PARTS) as store:
        fill(store, 30)
        store.compact()
        fill(store, 3, prefix="later")
    [snapshot] = files(tmp_path, "snapshot-*.json")
    upto = int(snapshot[len("snapshot-") : -len(".json")])
    stale = [tmp_path / f"snapshot-{upto - 1:08d}.part-{n:06d}" for n in range(3)]  # older than the snapshot
    for path in stale:
        path.write_bytes(b'["t",1,"a","a"]\n{"a":{}}')
    with Store(tmp_path, **PARTS) as store:
        assert store.count("t") == 33
    assert files(tmp_path, "snapshot-*.part-*") == []
