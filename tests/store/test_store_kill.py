"""kill -9 at random moments: acknowledged writes survive and the folder stays whole.

Set STORE_KILL_SEED to replay a failing sequence of kill times. The default run kills fewer
writers over a shorter journal; ``--long`` (or ``ZITI_LONG=1``) runs the full counts.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import pytest
from tinydb import TinyDB

from controller.store import journal
from controller.store.db import Store
from tests.sizes import size

WRITER = Path(__file__).with_name("_writer.py")
RUNS = size(24, 9)  # a multiple of the three modes
EXTRA_COMPACT_RUNS = 16
MODES = ("write", "compact", "concurrent")
PRELOAD = size(20_000, 8_000)  # records in the journal before the resume test's first run
MAX_RESUME_RUNS = 40
RESUME_KILL_PARTS = 100  # a resume run is killed after 1..100 new snapshot parts (of PRELOAD / 20)


class Ledger:
    """What the writers reported: acknowledged inserts, attempted and finished deletes."""

    def __init__(self):
        self.acked: set[str] = set()
        self.tried_delete: set[str] = set()
        self.deleted: set[str] = set()

    def read(self, lines: list[bytes]) -> None:
        for raw in lines:
            if not raw.endswith(b"\n"):
                continue  # killed while printing: that write was never reported
            verb, *keys = raw.decode().split()
            if verb == "ack":
                self.acked.update(keys)
            elif verb == "try-del":
                self.tried_delete.update(keys)
            elif verb == "del":
                self.deleted.update(keys)


def run_and_kill(folder: Path, mode: str, run: int, rng: random.Random) -> list[bytes]:
    """Start a writer, SIGKILL it at a random moment; returns its output lines."""
    command = [sys.executable, str(WRITER), str(folder), mode, f"r{run}", str(rng.randrange(2**32))]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines: list[bytes] = []
    ready = threading.Event()

    def drain():  # keeps the pipe empty so the writer never blocks on a print
        for line in process.stdout:
            lines.append(line)
            ready.set()
        ready.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        if not ready.wait(20) or not lines or not lines[0].startswith(b"ready"):
            raise RuntimeError(f"writer did not start: {process.stderr.read1(4096)!r}")
        if mode == "resume":
            # Killed inside the snapshot, after a random number of its parts, whatever the disk: with a fast fsync a
            # random lifetime can outlast a whole snapshot, and then no kill comes faster than one (the premise).
            parts = len(list(folder.glob("snapshot-*.part-*"))) + rng.randint(1, RESUME_KILL_PARTS)
            deadline = time.monotonic() + 20
            while len(list(folder.glob("snapshot-*.part-*"))) < parts and not list(folder.glob("snapshot-*.json")):
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the writer wrote too few snapshot parts within 20 s")
                time.sleep(0.001)
        else:
            time.sleep(rng.uniform(0.02, 0.4))  # the random moment of the kill is the point of this test
        if process.poll() is not None:
            raise RuntimeError(f"writer ended early: {process.stderr.read1(4096)!r}")
    finally:
        process.kill()
        process.wait(10)
        reader.join(10)
        process.stderr.close()
    return lines


def check(folder: Path, ledger: Ledger, where: str, *, compact: bool = True) -> int:
    """Reopen the folder and check the ledger against it; returns the record count.

    ``compact=False`` loads it without the Store, which would finish a pending snapshot.
    """
    if compact:
        with Store(folder) as store:  # opening cleanly is part of the check
            records = {record["id"]: record for record in store.all("records")}
    else:
        opened, tables = journal.Journal.open(folder, fsync=False)
        opened.close()
        records = tables.get("records", {})
    for key, record in records.items():
        assert record["crc"] == zlib.crc32(record["body"].encode()), f"{where}: {key} is not whole"
        members = (f"{record['tx']}-{index}" for index in range(record["size"]))
        partial = [key for key in members if key not in records and key not in ledger.tried_delete]
        assert not partial, f"{where}: transaction {record['tx']} is missing {sorted(partial)}"
    lost = ledger.acked - ledger.tried_delete - records.keys()
    assert not lost, f"{where}: acknowledged writes lost: {sorted(lost)[:10]}"
    back = ledger.deleted & records.keys()
    assert not back, f"{where}: deleted records came back: {sorted(back)[:10]}"
    return len(records)


@pytest.mark.slow
def test_acknowledged_writes_survive_kill_9_at_any_moment(tmp_path):
    seed = int(os.environ.get("STORE_KILL_SEED", random.randrange(2**32)))
    rng, folder, ledger = random.Random(seed), tmp_path / "data", Ledger()
    killed_mid_snapshot = 0

    # Every mode in turn; then, on a slow machine where no kill happened to land inside a snapshot
    # write, more compaction runs (bounded) until one does: that moment is the one the test is about.
    for run in range(RUNS + EXTRA_COMPACT_RUNS):
        if run >= RUNS and killed_mid_snapshot:
            break
        mode = MODES[run % len(MODES)] if run < RUNS else "compact"
        ledger.read(run_and_kill(folder, mode, run, rng))
        killed_mid_snapshot += mode == "compact" and any(folder.glob("snapshot-*.tmp"))
        check(folder, ledger, f"STORE_KILL_SEED={seed} run {run} ({mode})")

    assert len(ledger.acked) > RUNS, "the writers hardly wrote anything"
    assert len({key.split("-")[0] for key in ledger.acked if "t" in key.split("-")[0]}) > 1, (
        "no concurrent writers were acknowledged"
    )
    assert killed_mid_snapshot > 0, "no kill landed inside a snapshot write"
    with Store(folder) as store:
        store.compact()
        expected = store.count("records")
    [snapshot] = folder.glob("snapshot-*.json")
    with TinyDB(snapshot, access_mode="r") as stock:
        assert len(stock.table("records")) == expected


@pytest.mark.slow
def test_compaction_progresses_when_kills_come_faster_than_a_snapshot(tmp_path):
    seed = int(os.environ.get("STORE_KILL_SEED", random.randrange(2**32)))
    rng, folder, ledger = random.Random(seed), tmp_path / "data", Ledger()
    with Store(folder, compact_min_bytes=1 << 30) as store:  # a long journal and no snapshot yet
        for start in range(0, PRELOAD, 1000):
            with store.transaction():
                for index in range(start, start + 1000):
                    store.insert(
                        "records",
                        f"pre-{index}",
                        {
                            "id": f"pre-{index}",
                            "tx": "pre",
                            "size": 1,
                            "body": "x" * 200,
                            "crc": zlib.crc32(b"x" * 200),
                        },
                    )
    ledger.acked.update(f"pre-{index}" for index in range(PRELOAD))
    resumed = 0
    for run in range(MAX_RESUME_RUNS):
        lines = run_and_kill(folder, "resume", run, rng)
        ledger.read(lines)
        resumed += int(lines[0].split()[1]) > 0  # this run found parts an earlier, killed run had written
        check(folder, ledger, f"STORE_KILL_SEED={seed} run {run} (resume)", compact=False)
        if list(folder.glob("snapshot-*.json")):
            break
    assert list(folder.glob("snapshot-*.json")), f"STORE_KILL_SEED={seed}: no snapshot completed in {run + 1} runs"
    assert resumed > 0, "every snapshot finished within one run: the parts were never resumed"
