"""An append-only JSON-lines file that rotates by size and keeps a bounded number of old files.

``events.jsonl`` is the newest; ``events.jsonl.1`` the one before it, up to
``events.jsonl.<keep>``; older ones are deleted. The whole set therefore never
exceeds about ``max_bytes * (keep + 1)`` on disk, whatever the uptime.
"""

from __future__ import annotations

import os
from pathlib import Path

from controller.private_files import make_folder, open_private


class RotatingFile:
    """Append lines to ``path``; before a line would push it past ``max_bytes``, rotate."""

    def __init__(self, path: Path, max_bytes: int, keep: int):
        if max_bytes < 1 or keep < 0:
            raise ValueError("max_bytes must be positive and keep not negative")
        self.path, self.max_bytes, self.keep = Path(path), max_bytes, keep
        self._file = None
        self._size = 0
        self._torn = False

    def write(self, line: bytes) -> None:
        """Append one line (with its newline); OSError passes to the caller."""
        if self._file is None:
            self._open()
        # A line longer than the limit still gets a file of its own rather than being lost.
        if self._size and self._size + len(line) > self.max_bytes:
            self.rotate()
        if self._torn:
            line = b"\n" + line
        try:
            view = memoryview(line)
            while view:
                view = view[self._file.write(view) :]
        except OSError:
            self._cut()
            raise
        self._size += len(line)
        self._torn = False

    def _cut(self) -> None:
        """After a failed write: drop its partial line and close, so the next write reopens the file."""
        try:
            self._file.truncate(self._size)
        except OSError:
            self._torn = True  # the next write ends the torn line first, so later lines stay whole
        try:
            self.close()
        except OSError:
            self._file = None

    def rotate(self) -> None:
        """Shift ``path`` to ``path.1`` (and so on), dropping the oldest, and start an empty file."""
        self.close()
        oldest = self._numbered(self.keep)
        if self.keep == 0 or oldest.exists():
            (self.path if self.keep == 0 else oldest).unlink(missing_ok=True)
        for index in range(self.keep - 1, 0, -1):
            if self._numbered(index).exists():
                os.replace(self._numbered(index), self._numbered(index + 1))
        if self.keep and self.path.exists():
            os.replace(self.path, self._numbered(1))
        self._open()

    def files(self) -> list[Path]:
        """The files that exist, oldest first."""
        numbered = [self._numbered(i) for i in range(self.keep, 0, -1)]
        return [p for p in numbered + [self.path] if p.exists()]

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            finally:
                self._file = None

    def _open(self) -> None:
        make_folder(self.path.parent)
        self._file = open_private(self.path, "ab", buffering=0)
        self._size = self._file.tell()

    def _numbered(self, index: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{index}")
