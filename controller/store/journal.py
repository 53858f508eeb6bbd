"""The files of a store folder: format marker, snapshot and journal segments.

Layout of a folder::

    format.json              {"format": "ziti-edge-controller-store", "version": 1}
    store.lock               flock'd while a Store has the folder open
    snapshot-00000007.json   TinyDB JSON ({table: {key: record}}); covers segments < 7
    snapshot-00000009.part-000002   a part of the next snapshot (see ``snapshots``)
    journal-00000007.log     one line per commit: "<crc32 hex> <json ops>\\n"
    journal-00000008.log

A commit is durable once its line is written and fsynced. A line without its
newline or with a bad CRC at the end of a segment is a torn write and is dropped
on load; a bad line followed by whole lines is real damage and refuses to load.
Ops are whole-record puts and deletes, so replaying a segment twice is harmless.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import re
import threading
import zlib
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import orjson

from controller.gc_pause import gc_paused
from controller.private_files import make_folder, open_fd, open_private
from controller.store import snapshots

log = logging.getLogger(__name__)

FORMAT_NAME = "ziti-edge-controller-store"
FORMAT_VERSION = 1
FORMAT_FILE = "format.json"
LOCK_FILE = "store.lock"
COMPACT_MIN_BYTES = 4 << 20
_SNAPSHOT_RE = re.compile(r"snapshot-(\d{8})\.json")
_SEGMENT_RE = re.compile(r"journal-(\d{8})\.log")
_CHUNK = 1000  # records per orjson call while writing a snapshot: lets writers take the GIL in between

Tables = dict[str, dict[str, dict]]


class StoreError(RuntimeError):
    """A store folder cannot be opened."""


class StoreFormatError(StoreError):
    """The folder is not a store, or one of a format this code does not read."""


class StoreCorruptError(StoreError):
    """A store file is damaged beyond a torn last write."""


class StoreInUseError(StoreError):
    """Another Store (in this or another process) has the folder open."""


def snapshot_name(upto: int) -> str:
    return f"snapshot-{upto:08d}.json"


def segment_name(number: int) -> str:
    return f"journal-{number:08d}.log"


def encode_entry(changes: Iterable[Any]) -> bytes:
    """One journal line for the changes of one commit."""
    payload = orjson.dumps([[c.table, c.key, c.new] for c in changes])
    return b"%08x %b\n" % (zlib.crc32(payload), payload)


def decode_segment(data: bytes, name: str, dropped: Callable[[int], None] | None = None) -> Iterator[list]:
    """The op lists of a segment's whole lines, one at a time; a torn tail is dropped.

    One at a time so the loader shares each commit's strings before parsing the
    next (see ``compact``). A damaged line followed by whole ones raises once
    those are reached: the caller's half-loaded tables are discarded then. Once
    every line is read, ``dropped`` gets the size of the torn tail in bytes (0: none).
    """
    body, newline, _torn = data.rpartition(b"\n")
    lines = body.split(b"\n") if newline else []
    damaged = None
    whole = 0  # bytes of the whole lines so far, each with its newline
    for number, line in enumerate(lines, 1):
        ops = _decode_line(line, name, number)
        if ops is None:
            damaged = damaged or number
        elif damaged is not None:
            raise StoreCorruptError(f"{name}: line {damaged} is damaged but later lines are whole")
        else:
            whole += len(line) + 1
            yield ops
    if dropped is not None:
        dropped(len(data) - whole)


def _decode_line(line: bytes, name: str, number: int) -> list | None:
    if len(line) < 10 or line[8:9] != b" ":
        return None
    try:
        crc = int(line[:8], 16)
    except ValueError:
        return None
    payload = line[9:]
    if zlib.crc32(payload) != crc:
        return None
    try:
        ops = orjson.loads(payload)
    except orjson.JSONDecodeError as ex:
        raise StoreCorruptError(f"{name}: line {number} has a valid CRC but is not JSON") from ex
    if not isinstance(ops, list) or not all(_is_op(op) for op in ops):
        raise StoreCorruptError(f"{name}: line {number} is not a list of [table, key, record] ops")
    return ops


def _is_op(op: Any) -> bool:
    return (
        isinstance(op, list)
        and len(op) == 3
        and isinstance(op[0], str)
        and isinstance(op[1], str)
        and (op[2] is None or isinstance(op[2], dict))
    )


def apply_ops(tables: Tables, ops: list, share: snapshots.Share = snapshots.unshared) -> None:
    """Apply one commit's ops to plain tables (used while loading)."""
    for table, key, record in ops:
        if record is not None:
            key, record = share(key, record)
            tables.setdefault(table, {})[key] = record
        elif key in tables.get(table, ()):
            del tables[table][key]
            if not tables[table]:
                del tables[table]


def load_snapshot(path: Path, share: snapshots.Share = snapshots.unshared) -> Tables:
    """The tables of a snapshot file; ``share`` (see ``compact``) rewrites each chunk of records."""
    raw = path.read_bytes()
    tables = snapshots.load_lines(raw, share)
    if tables is not None:
        return tables
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as ex:
        raise StoreCorruptError(f"{path.name} is not valid JSON") from ex
    if not isinstance(data, dict) or not all(isinstance(docs, dict) for docs in data.values()):
        raise StoreCorruptError(f"{path.name} is not a TinyDB file of tables")
    for docs in data.values():
        if not all(isinstance(doc, dict) for doc in docs.values()):
            raise StoreCorruptError(f"{path.name} holds a record that is not an object")
    return {name: dict(share(key, doc) for key, doc in docs.items()) for name, docs in data.items() if docs}


def write_copy(dest: str | os.PathLike, tables: Tables, *, fsync: bool) -> None:
    """A new store folder at ``dest`` holding ``tables`` (which must not be written meanwhile)."""
    folder = make_folder(dest)
    if _significant(os.listdir(folder)):
        raise FileExistsError(f"{folder} is not empty")
    _write_format(folder, fsync)
    _write_snapshot(folder, 0, tables, fsync)


class Journal:
    """The open files of one store folder. Appends come under the Store lock."""

    def __init__(
        self,
        folder: Path,
        *,
        fsync: bool,
        lock_fd: int | None,
        part_records: int = snapshots.PART_RECORDS,
        share: snapshots.Share = snapshots.unshared,
    ):
        self.folder = folder
        self.share = share  # applied to every record loaded (see ``compact``)
        self.fsync = fsync
        self.part_records = part_records
        #: (upto, tables at upto) of a snapshot an earlier run left half-written: finish it
        self.resume: tuple[int, Tables] | None = None
        self.snapshot_bytes = 0
        self._lock = threading.Lock()  # guards the bookkeeping below against the compaction thread
        self._lock_fd = lock_fd
        self._file = None
        self._seg = 0  # the segment the next append goes to
        self._sizes: dict[int, int] = {}  # bytes of each segment not yet covered by the snapshot
        self._snapshot: int | None = None  # ``upto`` of the snapshot file on disk
        # group commit: bytes ever written and bytes known fsynced, guarded by ``_synced``
        self._synced = threading.Condition(threading.Lock())
        self._written = self._durable = 0
        self._syncing = False
        #: group-commit fsyncs so far (commits / fsyncs is how many commits each one covered)
        self.fsyncs = 0
        self._failed: OSError | None = None

    @classmethod
    def open(
        cls,
        path: str | os.PathLike,
        *,
        fsync: bool,
        part_records: int = snapshots.PART_RECORDS,
        share: snapshots.Share = snapshots.unshared,
    ) -> tuple[Journal, Tables]:
        """Open (or initialise) a folder; returns the journal and the loaded tables."""
        folder = make_folder(path)
        _check_format(folder, fsync)  # before locking: leave no lock file in a foreign folder
        lock_fd = _lock_folder(folder)
        try:
            journal = cls(folder, fsync=fsync, lock_fd=lock_fd, part_records=part_records, share=share)
            return journal, journal._load(os.listdir(folder))
        except BaseException:
            if lock_fd is not None:
                os.close(lock_fd)
            raise

    @property
    def pending_bytes(self) -> int:
        """Journal bytes the snapshot does not cover yet."""
        with self._lock:
            return sum(self._sizes.values())

    def _load(self, names: list[str]) -> Tables:
        with gc_paused():  # parsed JSON has no cycles, and the GC would scan it 4x over
            return self._load_files(names)

    def _load_files(self, names: list[str]) -> Tables:
        snaps, segs = _numbered(names, _SNAPSHOT_RE), _numbered(names, _SEGMENT_RE)
        tables: Tables = {}
        upto = max(snaps, default=0)
        if snaps:
            path = self.folder / snapshot_name(upto)
            tables, self._snapshot = load_snapshot(path, self.share), upto
            self.snapshot_bytes = path.stat().st_size
        parted = _numbered(names, snapshots.PART_RE)
        pending = max((n for n in parted if n > upto), default=None)
        for number in sorted(n for n in segs if n >= upto):
            if number == pending:  # the tables as the half-written snapshot saw them
                self.resume = pending, {name: dict(docs) for name, docs in tables.items()}
            data = (self.folder / segment_name(number)).read_bytes()
            torn: list[int] = []
            for ops in decode_segment(data, segment_name(number), torn.append):
                apply_ops(tables, ops, self.share)
            self._sizes[number] = len(data) - self._repair_torn(number, len(data), torn[0])
        if pending is not None and self.resume is None:
            self.resume = pending, {name: dict(docs) for name, docs in tables.items()}
        # NOTE: never append to a segment from an earlier run: it may end in a torn line.
        self._seg = max([upto, *(n + 1 for n in segs), *(n for n in parted)])
        stale = [snapshot_name(n) for n in snaps if n < upto] + [segment_name(n) for n in segs if n < upto]
        stale += [name for name in names if _is_part(name) is not None and _is_part(name) != pending]
        _unlink_all(self.folder, stale + [n for n in names if n.endswith(".tmp")])
        return tables

    def _repair_torn(self, number: int, size: int, dropped: int) -> int:
        """Say that a segment's torn tail (never acknowledged) is dropped, and cut it off the file; returns it."""
        if not dropped:
            return 0
        name = segment_name(number)
        log.warning(
            "store: %s ended in a write cut short (the process stopped mid-commit); dropped its last %d bytes, "
            "a commit that was never acknowledged",
            name,
            dropped,
        )
        try:
            with open_private(self.folder / name, "r+b") as handle:
                handle.truncate(size - dropped)
                if self.fsync:
                    os.fsync(handle.fileno())
        except OSError as ex:  # a read-only folder: dropped again on every load, as before
            log.warning("store: cannot cut the torn tail off %s: %s", name, ex.strerror)
        return dropped

    def append(self, line: bytes) -> None:
        """Write one commit line durably, or raise OSError leaving the files as they were."""
        self.sync(self.write(line))

    def write(self, line: bytes) -> int:
        """Write one commit line (not yet fsynced); returns the ticket ``sync`` takes.

        Raises OSError leaving the files as they were. Appends come under the Store lock.
        """
        with self._lock:
            if self._failed is not None:
                raise OSError(errno.EIO, "an earlier fsync of the journal failed") from self._failed
            if self._file is None:
                self._file = self._create_segment()
            start = self._sizes.get(self._seg, 0)
            try:
                _write_all(self._file, line)
            except BaseException:  # also e.g. KeyboardInterrupt: the caller undoes the commit
                self._undo(start)
                raise
            self._sizes[self._seg] = start + len(line)
            self._written += len(line)
            return self._written

    def sync(self, ticket: int) -> None:
        """Return once every line up to ``ticket`` is on disk: group commit.

        The first waiter fsyncs everything written so far; the others wait for
        it (or for the next one), so concurrent commits share one fsync. Called
        outside the Store lock, so writers go on appending meanwhile. Raises
        OSError if the fsync failed: the journal then refuses further writes.
        """
        if not self.fsync:
            return
        with self._synced:
            while self._durable < ticket:
                if self._failed is not None:
                    raise OSError(errno.EIO, "the fsync of the journal failed") from self._failed
                if self._syncing:
                    self._synced.wait()
                    continue
                self._lead_sync()

    def _lead_sync(self) -> None:
        """Under ``_synced``: fsync the open segment for every waiter, releasing it meanwhile."""
        target, handle = self._written, self._file
        self._syncing = True
        self._synced.release()
        try:
            if handle is not None:
                os.fsync(handle.fileno())
                self.fsyncs += 1
        except OSError as ex:
            log.error("store: fsync of the journal failed; refusing further writes: %s", ex)
            self._failed = ex
        finally:
            self._synced.acquire()
            self._syncing = False
            self._synced.notify_all()
        if self._failed is None:
            self._durable = max(self._durable, target)

    def _settle(self) -> None:
        """Before a segment closes: wait out a running fsync, then fsync what is left."""
        with self._synced:
            while self._syncing:
                self._synced.wait()
            if self._file is not None and self.fsync and self._durable < self._written and self._failed is None:
                os.fsync(self._file.fileno())
            self._durable = self._written

    def _create_segment(self):
        path = self.folder / segment_name(self._seg)
        handle = self._open_file(path)
        self._sizes.setdefault(self._seg, 0)
        try:
            if self.fsync:
                _fsync_dir(self.folder)  # the new name must survive a power cut too
        except OSError:
            handle.close()
            raise
        return handle

    def _open_file(self, path: Path):
        return open_private(path, "ab", buffering=0)

    def _undo(self, start: int) -> None:
        """Cut a failed write off the segment; if that fails too, never append to it again."""
        try:
            self._file.truncate(start)
        except OSError as ex:
            log.warning(
                "store: cannot cut a failed write from %s (%s); starting a new segment", segment_name(self._seg), ex
            )
            try:
                self._settle()  # earlier lines of the segment may still await their fsync
            except OSError as sync_error:
                self._failed = sync_error
            self._close_file()
            self._seg += 1

    def rotate(self) -> int:
        """Start a new segment; returns ``upto``: the segments below it are closed."""
        self._settle()
        with self._lock:
            if self._file is not None:
                self._close_file()
                self._seg += 1
            return self._seg

    def write_snapshot(self, upto: int, tables: Tables) -> int:
        """Write the snapshot covering segments < ``upto`` (part by part, resumable); returns its size.

        No lock needed.
        """
        parts = snapshots.write_parts(
            self.folder, upto, tables, per_part=self.part_records, fsync=self.fsync, replace=_replace_atomically
        )
        name = snapshot_name(upto)
        _replace_atomically(
            self.folder, name, lambda handle: snapshots.join_parts(handle, self.folder, upto, parts), self.fsync
        )
        return (self.folder / name).stat().st_size

    def discard_parts(self, upto: int) -> None:
        """After a failed compaction: remove the part files (and temp files) of snapshot ``upto``.

        A full disk is the usual cause, and the parts are what fills it; a compaction killed
        half-way (no chance to run this) still leaves its parts for the next start to finish.
        """
        names = os.listdir(self.folder)
        leftovers = [n for n in names if _is_part(n) == upto or (n.endswith(".tmp") and n.startswith("snapshot-"))]
        _unlink_all(self.folder, leftovers)
        if leftovers:
            log.warning("store: the snapshot could not be written; removed the %d part files it left", len(leftovers))

    def retire(self, upto: int, size: int) -> None:
        """Adopt the snapshot ``upto`` and delete the files it covers."""
        with self._lock:
            covered = [n for n in self._sizes if n < upto]
            dead = [segment_name(n) for n in covered]
            for number in covered:
                del self._sizes[number]
            if self._snapshot is not None and self._snapshot != upto:
                dead.append(snapshot_name(self._snapshot))
            self._snapshot, self.snapshot_bytes = upto, size
        dead += [name for name in os.listdir(self.folder) if _is_part(name)]
        _unlink_all(self.folder, dead)  # outside the lock: unlinking a big file takes a while

    def close(self) -> None:
        try:
            self._settle()
        except OSError as ex:
            log.error("store: final fsync of the journal failed: %s", ex)
        with self._lock:
            self._close_file()
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None

    def _close_file(self) -> None:
        handle, self._file = self._file, None
        if handle is not None:
            try:
                handle.close()
            except OSError as ex:  # every line in it was fsynced already
                log.warning("store: closing %s: %s", segment_name(self._seg), ex)


def _lock_folder(folder: Path) -> int | None:
    path = folder / LOCK_FILE
    try:
        fd = open_fd(path, os.O_RDWR)
    except OSError:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return None  # a read-only folder without a lock file: nobody can write to it anyway
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as ex:
        os.close(fd)
        raise StoreInUseError(f"{folder} is already open in another store") from ex
    return fd


def _check_format(folder: Path, fsync: bool) -> None:
    """Check (or, in an empty folder, write) the format marker."""
    if not _significant(os.listdir(folder)):
        _write_format(folder, fsync)
        return
    path = folder / FORMAT_FILE
    try:
        info = orjson.loads(path.read_bytes())
    except FileNotFoundError as ex:
        raise StoreFormatError(f"{folder} is not empty and has no {FORMAT_FILE}: not a store folder") from ex
    except orjson.JSONDecodeError as ex:
        raise StoreFormatError(f"{path} is not valid JSON") from ex
    if not isinstance(info, dict) or info.get("format") != FORMAT_NAME:
        raise StoreFormatError(f"{path} does not name the format {FORMAT_NAME!r}")
    version = info.get("version")
    if type(version) is not int or version < 1:
        raise StoreFormatError(f"{path} has an unknown format version {version!r}")
    if version > FORMAT_VERSION:
        raise StoreFormatError(
            f"{folder} uses store format version {version}, newer than version "
            f"{FORMAT_VERSION} that this controller reads: upgrade the controller"
        )


def _write_format(folder: Path, fsync: bool) -> None:
    data = orjson.dumps({"format": FORMAT_NAME, "version": FORMAT_VERSION})
    _replace_atomically(folder, FORMAT_FILE, lambda handle: handle.write(data), fsync)


def _write_snapshot(folder: Path, upto: int, tables: Tables, fsync: bool) -> int:
    _replace_atomically(folder, snapshot_name(upto), lambda handle: _dump_tables(handle, tables), fsync)
    return (folder / snapshot_name(upto)).stat().st_size


def _replace_atomically(folder: Path, name: str, write, fsync: bool) -> None:
    """Write ``name`` via a temp file, fsync, rename over, fsync the folder."""
    tmp = folder / (name + ".tmp")
    handle = open_private(tmp, "wb")
    try:
        with handle:
            write(handle)
            handle.flush()
            if fsync:
                os.fsync(handle.fileno())
        os.replace(tmp, folder / name)
    except BaseException:
        _unlink_all(folder, [tmp.name])
        raise
    if fsync:
        _fsync_dir(folder)


def _dump_tables(handle, tables: Tables) -> None:
    """TinyDB JSON in the line layout (see ``snapshots``), in chunks so no call holds the GIL for long."""
    handle.write(b"{")
    for index, (name, docs) in enumerate(tables.items()):
        handle.write(b"%b%b:{" % (b"\n}," if index else b"", orjson.dumps(name)))
        keys = list(docs)
        for start in range(0, len(keys), _CHUNK):
            handle.write((b",\n" if start else b"\n") + snapshots.record_lines(docs, keys[start : start + _CHUNK]))
    handle.write(b"\n}}" if tables else b"}")


def _write_all(handle, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = handle.write(view)
        view = view[written:]


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _significant(names: list[str]) -> list[str]:
    return [name for name in names if name != LOCK_FILE and not name.endswith(".tmp")]


def _is_part(name: str) -> int | None:
    """The ``upto`` of a snapshot part file's name, else None."""
    match = snapshots.PART_RE.fullmatch(name)
    return int(match.group(1)) if match else None


def _numbered(names: list[str], pattern: re.Pattern) -> list[int]:
    return [int(match.group(1)) for match in map(pattern.fullmatch, names) if match]


def _unlink_all(folder: Path, names: list[str]) -> None:
    for name in names:
        try:
            os.unlink(folder / name)
        except FileNotFoundError:
            pass
        except OSError as ex:  # harmless: the next open removes it
            log.warning("store: cannot remove %s: %s", name, ex)
