"""Secrets at rest: the data folder and everything the controller writes in it is owner-only, whatever the umask."""

from __future__ import annotations

import logging
import os
import re
import stat
from contextlib import contextmanager
from pathlib import Path

import pytest

from controller.app import create_app
from controller.config import Config
from controller.store.db import Store
from harness.client import ZitiClient
from harness.client.transport import inprocess
from harness.processes.files import private_folder, write_private


@contextmanager
def umask(value: int):
    old = os.umask(value)
    try:
        yield
    finally:
        os.umask(old)


def open_to_others(root: Path) -> list[str]:
    """Every path under ``root`` (itself included) whose mode grants group or others anything."""
    found = []
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(os.lstat(path).st_mode)
        expected = 0o700 if path.is_dir() else 0o600
        if mode & 0o077 or mode != expected:
            found.append(f"{path.relative_to(root)} {oct(mode)}")
    return found


def use_everything(data: Path, clock) -> None:
    """A controller that writes journal, snapshot, snapshot parts, events, PKI and a database snapshot."""
    config = Config(data_dir=data, fsync=False)
    app = create_app(config, clock=clock)
    try:
        with inprocess(app) as http:
            admin = ZitiClient(http).signed_in("admin", "admin")
            for n in range(3):
                admin.create("identities", {"name": f"private-{n}", "type": "User", "isAdmin": False})
            admin.mgmt_ok("POST", "/database/snapshot")
        app.controller.store.compact()  # snapshot-*.json written through part files
        app.controller.store.put("probe", "after", {"n": 1})  # a fresh journal segment
    finally:
        app.controller.close()


@pytest.mark.parametrize("mask", [0o022, 0o002], ids=["umask022", "umask002"])
def test_a_fresh_data_folder_is_owner_only_whatever_the_umask(tmp_path, ziti_clock, mask):
    data = tmp_path / "new" / "data"
    with umask(mask):
        use_everything(data, ziti_clock)
    names = {path.name for path in data.rglob("*")}
    assert {"db", "pki", "snapshots", "events.jsonl"} <= names
    assert any(name.startswith("snapshot-") and name.endswith(".json") for name in names)
    assert any(name.startswith("journal-") for name in names)
    assert open_to_others(data) == []
    assert stat.S_IMODE(os.stat(tmp_path / "new").st_mode) == 0o700  # a parent it had to create too


def test_snapshot_part_files_are_owner_only(tmp_path):
    with umask(0o002):
        store = Store(tmp_path / "db", fsync=False, compact_min_bytes=1 << 30, snapshot_part_records=2)
        with store.transaction():
            for n in range(9):
                store.put("t", f"k{n}", {"n": n})
        upto, tables = store._begin_compaction()
        store._journal.write_snapshot(upto, tables)  # the parts stay until retired
        parts = list((tmp_path / "db").glob("snapshot-*.part-*"))
        store.close()
    assert len(parts) == 5
    assert open_to_others(tmp_path / "db") == []


def test_an_old_world_readable_folder_is_repaired_at_start_in_one_log_line(tmp_path, ziti_clock, caplog):
    data = tmp_path / "data"
    with umask(0o022):
        use_everything(data, ziti_clock)
    opened = 0
    for path in [data, *data.rglob("*")]:  # as a controller from before this rule left it
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
        opened += 1
    with caplog.at_level(logging.WARNING, logger="controller.files"):
        app = create_app(Config(data_dir=data, fsync=False), clock=ziti_clock)
        app.controller.close()
    assert open_to_others(data) == []
    lines = [r.getMessage() for r in caplog.records if r.name == "controller.files"]
    assert len(lines) == 1 and "files and folders were open to group or others; made them owner-only" in lines[0]
    said = int(re.search(r": (\d+) files", lines[0]).group(1))
    assert opened - 2 <= said <= opened  # the store's lock file is fixed as the store opens it
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="controller.files"):
        create_app(Config(data_dir=data, fsync=False), clock=ziti_clock).controller.close()
    assert [r for r in caplog.records if r.name == "controller.files"] == []  # nothing left to say


def test_harness_folders_and_written_tokens_are_owner_only(tmp_path):
    with umask(0o002):
        folder = private_folder(tmp_path / "up" / "jwts")
        token = write_private(folder / "alice.jwt", "eyJ...")
    assert open_to_others(tmp_path / "up") == []
    assert token.read_text() == "eyJ..."


def test_the_harness_local_controller_data_folder_is_owner_only(tmp_path):
    from harness.processes.server import LocalController

    with umask(0o002):
        with LocalController(data_dir=tmp_path / "harness" / "data") as local:
            assert local.data_dir.is_dir()
    assert open_to_others(tmp_path / "harness") == []


def test_repair_leaves_what_the_controller_does_not_own(tmp_path, ziti_clock):
    data = tmp_path / "home"
    data.mkdir()
    script = data / "tool.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    (data / "shared").mkdir(mode=0o755)
    create_app(Config(data_dir=data, fsync=False), clock=ziti_clock).controller.close()
    assert stat.S_IMODE(script.stat().st_mode) == 0o755 and stat.S_IMODE((data / "shared").stat().st_mode) == 0o755
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert open_to_others(data / "db") == [] and open_to_others(data / "pki") == []
