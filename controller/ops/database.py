"""Database snapshots: a consistent copy of the store that a controller can start from.

``POST /database/snapshot`` writes ``<data_dir>/snapshots/ctrl.db-<UTC timestamp>``
(a store folder: open it with ``Store(path)``) at most once per
``Config.snapshot_min_interval_seconds`` (the real controller: a minute), by
the controller clock; sooner is 429 ``RATE_LIMITED``. Without a data folder
the snapshots go to a temporary folder removed when the controller closes.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
from datetime import datetime, timedelta
from pathlib import Path
from typing import Iterable, Iterator

from controller.clock import Clock
from controller.errors import RateLimited, Unavailable
from controller.private_files import make_folder
from controller.store.db import ChangeContext, Store

SNAPSHOT_DIR = "snapshots"
PREFIX = "ctrl.db-"


class Database:
    def __init__(self, *, store: Store, clock: Clock, events, data_dir: Path | None, min_interval_seconds: float):
        self.store, self.clock, self.events, self.data_dir = store, clock, events, data_dir
        self.interval = timedelta(seconds=min_interval_seconds)
        self._lock = threading.Lock()
        self._last: datetime | None = None
        self._temp_root: Path | None = None

    def snapshot(self, *, force: bool = False) -> Path:
        """Write a snapshot now; ``force`` skips the rate limit (the integrity fix's own snapshot)."""
        now = self.clock.now()
        with self._lock:
            if not force and self._last is not None and now - self._last < self.interval:
                raise RateLimited(
                    message=f"a database snapshot was taken less than {int(self.interval.total_seconds())} seconds ago"
                )
            previous, self._last = self._last, now
        try:
            dest = self._destination(now)
            self.store.snapshot_to(dest)
        except BaseException as ex:
            with self._lock:
                self._last = previous
            if isinstance(ex, OSError):
                raise Unavailable(message=f"the snapshot could not be written: {ex.strerror}") from ex
            raise
        self.events.emit("database", "snapshot", path=str(dest))
        return dest

    @contextlib.contextmanager
    def transaction(self, context: ChangeContext | None = None) -> Iterator[None]:
        """Many writes as one commit, all or nothing (an import): under the store lock."""
        with self.store.lock, self.store.transaction(context):
            yield

    def counts(self, tables: Iterable[str]) -> dict[str, int]:
        """How many records each table holds, read at one instant."""
        with self.store.lock:
            return {table: self.store.count(table) for table in tables}

    def root(self) -> Path:
        if self.data_dir is not None:
            return Path(self.data_dir) / SNAPSHOT_DIR
        with self._lock:
            if self._temp_root is None:
                self._temp_root = Path(tempfile.mkdtemp(prefix="ztc-snapshots-"))
            return self._temp_root

    def _destination(self, now: datetime) -> Path:
        root = self.root()
        make_folder(root)
        base = root / (PREFIX + now.strftime("%Y%m%d-%H%M%S"))
        dest, number = base, 1
        while dest.exists():
            number += 1
            dest = base.with_name(f"{base.name}-{number}")
        return dest

    def close(self) -> None:
        with self._lock:
            if self._temp_root is not None:
                shutil.rmtree(self._temp_root, ignore_errors=True)
                self._temp_root = None
