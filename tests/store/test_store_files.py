"""Store folders: reopening, the format marker, torn lines and failed writes."""

from __future__ import annotations

import errno
import logging
import os
import stat

import orjson
import pytest

from controller.errors import Unavailable
from controller.store import journal
from controller.store.db import Store, StoreCorruptError, StoreFormatError, StoreInUseError


def segments(folder):
    return sorted(folder.glob("journal-*.log"))


def fill(folder, count=3, **options):
    """Write ``count`` records in a store at ``folder`` and close it."""
    with Store(folder, **options) as store:
        for index in range(count):
            store.put("t", f"k{index}", {"n": index})


def test_reopen_after_close_restores_every_record(tmp_path):
    with Store(tmp_path) as store:
        store.put("identities", "i1", {"name": "alice"})
        with store.transaction():
            store.put("identities", "i2", {"name": "bob"})
            store.put("services", "s1", {"name": "web"})
        store.delete("identities", "i1")

    with Store(tmp_path) as reopened:
        assert reopened.tables() == ["identities", "services"]
        assert reopened.all("identities") == [{"name": "bob"}]
        assert reopened.get("services", "s1") == {"name": "web"}


def test_one_transaction_is_one_journal_line(tmp_path):
    with Store(tmp_path) as store:
        with store.transaction():
            for index in range(10):
                store.put("t", f"k{index}", {"n": index})
        store.put("t", "single", {})

    assert sum(path.read_bytes().count(b"\n") for path in segments(tmp_path)) == 2


def test_empty_folder_is_initialised_with_a_format_marker(tmp_path):
    folder = tmp_path / "new" / "data"

    Store(folder).close()

    info = orjson.loads((folder / "format.json").read_bytes())
    assert info == {"format": journal.FORMAT_NAME, "version": Store.FORMAT_VERSION}


@pytest.mark.parametrize(
    "marker, message",
    [
        ({"format": journal.FORMAT_NAME, "version": 2}, "newer than version 1"),
        ({"format": journal.FORMAT_NAME, "version": "1"}, "unknown format version"),
        ({"format": "something-else", "version": 1}, "does not name the format"),
    ],
)
def test_unknown_or_newer_format_refuses_to_open(tmp_path, marker, message):
    fill(tmp_path)
    (tmp_path / "format.json").write_bytes(orjson.dumps(marker))

    with pytest.raises(StoreFormatError, match=message):
        Store(tmp_path)


def test_non_empty_folder_without_marker_is_not_taken_over(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")

    with pytest.raises(StoreFormatError, match="not a store folder"):
        Store(tmp_path)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["notes.txt"]


def test_folder_open_in_another_store_is_refused(tmp_path):
    with Store(tmp_path):
        with pytest.raises(StoreInUseError):
            Store(tmp_path)


def test_torn_last_line_is_dropped_and_the_rest_loads(tmp_path):
    fill(tmp_path, 3)
    last = segments(tmp_path)[-1]
    whole = last.read_bytes().splitlines(keepends=True)[-1]
    with open(last, "ab") as handle:
        handle.write(whole[: len(whole) // 2])

    with Store(tmp_path) as store:
        assert store.count("t") == 3
        store.put("t", "after", {"n": 99})
    with Store(tmp_path) as store:
        assert store.count("t") == 4


def test_whole_line_with_bad_crc_at_the_end_is_dropped(tmp_path):
    fill(tmp_path, 2)
    with open(segments(tmp_path)[-1], "ab") as handle:
        handle.write(b'00000000 [["t","bad",{"n":-1}]]\n')

    with Store(tmp_path) as store:
        assert store.get("t", "bad") is None
        assert store.count("t") == 2


def test_damage_before_whole_lines_refuses_to_open(tmp_path):
    fill(tmp_path, 3)
    last = segments(tmp_path)[-1]
    data = bytearray(last.read_bytes())
    data[20] ^= 0x01  # flip a bit inside the first line's payload
    last.write_bytes(bytes(data))

    with pytest.raises(StoreCorruptError, match="damaged"):
        Store(tmp_path)


class FailingFile:
    """A segment file that writes half of what it is given, then fails as a full disk does."""

    def __init__(self, real):
        self.real = real

    def write(self, data):
        self.real.write(bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name):
        return getattr(self.real, name)


def test_failed_write_raises_unavailable_and_leaves_memory_and_disk_unchanged(tmp_path):
    store = Store(tmp_path)
    store.put("t", "kept", {"n": 1})
    before = {path.name: path.read_bytes() for path in segments(tmp_path)}
    store._journal._file = FailingFile(store._journal._file)

    with pytest.raises(Unavailable):
        with store.transaction():
            store.put("t", "kept", {"n": 2})
            store.put("t", "lost", {"n": 3})

    assert store.get("t", "kept") == {"n": 1} and store.get("t", "lost") is None
    assert {path.name: path.read_bytes() for path in segments(tmp_path)} == before
    store._journal._file = store._journal._file.real  # the disk has room again
    store.put("t", "later", {"n": 4})
    store.close()
    with Store(tmp_path) as reopened:
        assert sorted(reopened.all("t"), key=lambda r: r["n"]) == [{"n": 1}, {"n": 4}]


def test_failed_write_that_cannot_be_cut_off_moves_to_a_new_segment(tmp_path):
    store = Store(tmp_path)
    store.put("t", "kept", {"n": 1})
    failing = FailingFile(store._journal._file)
    failing.truncate = lambda size: (_ for _ in ()).throw(OSError(errno.EIO, "I/O error"))
    store._journal._file = failing

    with pytest.raises(Unavailable):
        store.put("t", "lost", {"n": 2})
    store.put("t", "later", {"n": 3})
    store.close()

    assert len(segments(tmp_path)) == 2  # the first one ends in the torn half line
    with Store(tmp_path) as reopened:
        assert sorted(reopened.all("t"), key=lambda r: r["n"]) == [{"n": 1}, {"n": 3}]


def test_unwritable_folder_raises_unavailable_and_loses_nothing(tmp_path, monkeypatch):
    fill(tmp_path, 3)

    def read_only(self, path):
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(journal.Journal, "_open_file", read_only)
    with Store(tmp_path) as store:
        with pytest.raises(Unavailable):
            store.put("t", "new", {"n": 9})
        assert store.get("t", "new") is None and store.count("t") == 3
    monkeypatch.undo()

    with Store(tmp_path) as store:
        assert store.count("t") == 3 and store.get("t", "new") is None


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_folder_opens_for_reads_and_refuses_writes(tmp_path):
    folder = tmp_path / "data"
    fill(folder, 3)
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        with Store(folder) as store:
            with pytest.raises(Unavailable):
                store.put("t", "new", {})
            assert store.count("t") == 3
    finally:
        folder.chmod(stat.S_IRWXU)
    with Store(folder) as store:
        assert store.count("t") == 3


def test_a_torn_last_line_is_cut_off_at_start_and_said_once_with_its_size(tmp_path, caplog):
    fill(tmp_path, 3)
    last = segments(tmp_path)[-1]
    whole = last.read_bytes()
    torn = b'0badc0de [["t","k9",{"n"'  # a commit the process was writing when it stopped
    last.write_bytes(whole + torn)

    with caplog.at_level(logging.WARNING, logger="controller.store.journal"):
        with Store(tmp_path) as store:
            assert store.count("t") == 3
    said = [r.getMessage() for r in caplog.records if "cut short" in r.getMessage()]
    assert said == [
        f"store: {last.name} ended in a write cut short (the process stopped mid-commit); "
        f"dropped its last {len(torn)} bytes, a commit that was never acknowledged"
    ]
    assert last.read_bytes() == whole  # repaired on disk: the next start has nothing to say
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="controller.store.journal"):
        with Store(tmp_path) as store:
            assert store.count("t") == 3
    assert not [r for r in caplog.records if "cut short" in r.getMessage()]


def test_a_damaged_last_line_counts_its_newline_as_dropped(tmp_path, caplog):
    fill(tmp_path, 2)
    last = segments(tmp_path)[-1]
    whole = last.read_bytes()
    damaged = b"00000000 [] \n"  # a whole line whose CRC does not match: the tail of a torn write
    last.write_bytes(whole + damaged)
    with caplog.at_level(logging.WARNING, logger="controller.store.journal"):
        Store(tmp_path).close()
    assert f"dropped its last {len(damaged)} bytes" in caplog.text
    assert last.read_bytes() == whole
