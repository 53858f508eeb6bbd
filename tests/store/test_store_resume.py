"""A snapshot cut short (killed, or a full disk) is finished by the next run, not restarted."""

from __future__ import annotations

import errno

import pytest
from tinydb import TinyDB

from controller.errors import Unavailable
from controller.store import journal
from controller.store.db import Store

PARTS = dict(compact_min_bytes=1 << 30, snapshot_part_records=10)


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
            raise OSError(errno.ENOSPC, "No space left on device")
        parts_written.append(name)
        real_replace(folder, name, write, fsync)

    with Store(tmp_path, **PARTS) as store:
        fill(store, 100)
        monkeypatch.setattr(journal, "_replace_atomically", replace_until_disk_full)
        with pytest.raises(Unavailable):
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
            raise OSError(errno.ENOSPC, "No space left on device")
        written.append(name)
        real_replace(folder, name, write, fsync)

    with Store(tmp_path, **PARTS) as store:
        fill(store, 30)
        monkeypatch.setattr(journal, "_replace_atomically", fail_after_two_parts)
        with pytest.raises(Unavailable):
            store.compact()
    written.clear()
    monkeypatch.setattr(journal, "_replace_atomically", _counting(real_replace, written))

    with Store(tmp_path, compact_min_bytes=1 << 30, snapshot_part_records=7) as store:
        assert store.count("t") == 30
    assert len([name for name in written if ".part-" in name]) == 5  # 30 records / 7: none reusable
    with Store(tmp_path) as store:
        assert {r["n"] for r in store.all("t")} == set(range(30))
