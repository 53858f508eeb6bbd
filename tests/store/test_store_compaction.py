"""Compaction and copies: snapshots replace the journal without losing a commit."""

from __future__ import annotations

import threading

import pytest
from tinydb import TinyDB

from controller.errors import Unavailable
from controller.store import journal
from controller.store.db import Store


def files(folder, pattern):
    return sorted(path.name for path in folder.glob(pattern))


def contents(store):
    return {name: {record["id"]: record for record in store.all(name)} for name in store.tables()}


def test_compact_writes_a_tinydb_snapshot_and_drops_the_journal_it_covers(tmp_path):
    with Store(tmp_path) as store:
        store.put("identities", "i1", {"id": "i1", "name": "alice"})
        store.put("identities", "i2", {"id": "i2", "name": "bob"})
        store.compact()
        store.put("identities", "i3", {"id": "i3", "name": "carol"})

    [snapshot] = files(tmp_path, "snapshot-*.json")
    with TinyDB(tmp_path / snapshot, access_mode="r") as stock:
        assert stock.table("identities").get(doc_id="i2") == {"id": "i2", "name": "bob"}
        assert len(stock.table("identities")) == 2
    assert len(files(tmp_path, "journal-*.log")) == 1
    with Store(tmp_path) as reopened:
        assert reopened.count("identities") == 3


def test_snapshot_to_writes_a_copy_that_reopens_equal(tmp_path):
    with Store(tmp_path / "live") as store:
        for index in range(50):
            store.put("t", f"k{index}", {"id": f"k{index}", "n": index})
        store.delete("t", "k7")
        store.put("u", "x", {"id": "x", "nested": {"a": [1, None, True]}})

        store.snapshot_to(tmp_path / "copy")

        with Store(tmp_path / "copy") as copy:
            assert contents(copy) == contents(store)


def test_snapshot_to_refuses_a_non_empty_folder(tmp_path):
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / "keep.txt").write_text("x")

    with Store() as store, pytest.raises(FileExistsError):
        store.snapshot_to(tmp_path / "copy")


def test_compact_and_snapshot_to_are_refused_inside_a_transaction(tmp_path):
    with Store(tmp_path / "data") as store, store.transaction():
        with pytest.raises(RuntimeError):
            store.compact()
        with pytest.raises(RuntimeError):
            store.snapshot_to(tmp_path / "copy")


def test_large_journal_is_compacted_on_open(tmp_path):
    with Store(tmp_path, compact_min_bytes=1 << 30) as store:
        with store.transaction():
            for index in range(200):
                store.put("t", f"k{index}", {"id": f"k{index}", "pad": "x" * 100})
    assert files(tmp_path, "snapshot-*.json") == []

    with Store(tmp_path, compact_min_bytes=1000) as store:
        assert store.count("t") == 200
    assert len(files(tmp_path, "snapshot-*.json")) == 1
    assert files(tmp_path, "journal-*.log") == []


def test_journal_growth_triggers_background_compaction(tmp_path):
    with Store(tmp_path, fsync=False, compact_min_bytes=4000) as store:
        for index in range(100):
            store.put("t", f"k{index}", {"id": f"k{index}", "pad": "x" * 50})
    # close() waited for any compaction still running

    assert files(tmp_path, "snapshot-*.json") != []
    with Store(tmp_path) as reopened:
        assert reopened.count("t") == 100


def test_writes_continue_while_a_snapshot_is_being_written(tmp_path, monkeypatch):
    store = Store(tmp_path)
    store.put("t", "before", {"id": "before"})
    started, release = threading.Event(), threading.Event()
    real_write = journal.Journal.write_snapshot

    def slow_write(self, upto, tables):
        started.set()
        assert release.wait(10)
        return real_write(self, upto, tables)

    monkeypatch.setattr(journal.Journal, "write_snapshot", slow_write)
    compactor = threading.Thread(target=store.compact)
    compactor.start()
    assert started.wait(10)

    store.put("t", "during", {"id": "during"})  # would deadlock if compaction held the lock
    store.delete("t", "before")
    release.set()
    compactor.join(10)
    store.close()

    with Store(tmp_path) as reopened:
        assert contents(reopened) == {"t": {"during": {"id": "during"}}}


def test_failed_snapshot_keeps_the_journal_and_raises_unavailable(tmp_path, monkeypatch):
    store = Store(tmp_path)
    store.put("t", "a", {"id": "a"})

    def no_space(self, upto, tables):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(journal.Journal, "write_snapshot", no_space)
    with pytest.raises(Unavailable):
        store.compact()
    store.put("t", "b", {"id": "b"})
    store.close()

    with Store(tmp_path) as reopened:
        assert sorted(contents(reopened)["t"]) == ["a", "b"]


def test_compaction_during_concurrent_writes_from_threads_loses_nothing(tmp_path):
    store = Store(tmp_path, fsync=False, compact_min_bytes=8000)
    errors: list[BaseException] = []

    def writer(name):
        try:
            for index in range(150):
                if index % 10 == 0:
                    with store.transaction():
                        store.put("t", f"{name}-{index}", {"id": f"{name}-{index}", "w": name})
                        store.put("t", f"{name}-{index}b", {"id": f"{name}-{index}b", "w": name})
                else:
                    store.put("t", f"{name}-{index}", {"id": f"{name}-{index}", "w": name})
                if index % 3 == 0:
                    store.delete("t", f"{name}-{index}")
        except BaseException as ex:
            errors.append(ex)

    threads = [threading.Thread(target=writer, args=(f"w{n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for _ in range(5):
        store.compact()
    for thread in threads:
        thread.join(30)
    expected = contents(store)
    store.close()

    assert errors == []
    assert len(expected["t"]) == 4 * (100 + 15)
    with Store(tmp_path) as reopened:
        assert contents(reopened) == expected
