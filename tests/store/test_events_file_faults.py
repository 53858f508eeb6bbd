"""The events file after a full disk: kept off only while the disk is full, retried on the controller clock."""

from __future__ import annotations

import errno
import logging

import orjson

from controller import event_file
from controller.app import create_app
from controller.config import Config
from controller.events import FILE_RETRY_SECONDS


class Disk:
    """Files opened by the events file write while ``full`` is False; a write on a full disk writes half, then fails."""

    def __init__(self):
        self.full = False
        self.attempts = 0

    def opener(self, real_open):
        disk = self

        class File:
            def __init__(self, handle):
                self.handle = handle

            def write(self, data):
                disk.attempts += 1
                if disk.full:
                    self.handle.write(bytes(data[: len(data) // 2]))
                    raise OSError(errno.ENOSPC, "No space left on device")
                return self.handle.write(data)

            def __getattr__(self, name):
                return getattr(self.handle, name)

        return lambda *args, **kwargs: File(real_open(*args, **kwargs))


def lines(path):
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_the_events_file_comes_back_when_space_returns(tmp_path, ziti_clock, monkeypatch, caplog):
    disk = Disk()
    monkeypatch.setattr(event_file, "open_private", disk.opener(event_file.open_private))
    app = create_app(Config(data_dir=tmp_path, fsync=False), clock=ziti_clock)
    events = app.controller.events
    try:
        with caplog.at_level(logging.WARNING, logger="controller.events"):
            events.emit("test", "before")
            disk.attempts, disk.full = 0, True
            for n in range(5):
                events.emit("test", "while-full", n=n)
            assert disk.attempts == 1  # one failed write, then none until the retry time
            ziti_clock.advance(seconds=FILE_RETRY_SECONDS)
            events.emit("test", "still-full")  # one retry: still full, stays off, says nothing new
            assert disk.attempts == 2
            disk.full = False
            events.emit("test", "too-soon")  # space is back, but the next retry is not due
            assert disk.attempts == 2
            ziti_clock.advance(seconds=FILE_RETRY_SECONDS)
            events.emit("test", "after")
        said = [r.getMessage() for r in caplog.records if r.name == "controller.events"]
        assert len(said) == 2
        assert "cannot write" in said[0] and f"retrying every {FILE_RETRY_SECONDS:g} s" in said[0]
        assert (
            said[1] == f"events: writing {tmp_path / 'events.jsonl'} again; 7 events meanwhile were kept in memory only"
        )
        written = [(e["namespace"], e.get("event_type")) for e in lines(tmp_path / "events.jsonl")]
        assert ("test", "before") in written and written[-1] == ("test", "after")  # whole lines only
        assert not any(kind in ("while-full", "still-full", "too-soon") for _, kind in written)
        assert len(events.query("test")) == 9  # memory kept every one
    finally:
        app.controller.close()
