"""Helper process of the kill -9 test: writes until killed, reporting acknowledged writes.

Usage: python _writer.py FOLDER MODE RUN SEED, MODE being "write", "compact",
"concurrent" or "resume".

Prints ``ready`` once the store is open, then per commit, only after it returned:
``ack KEY...`` for a transaction of inserts, ``try-del KEY`` before a delete and
``del KEY`` after it. In "compact" mode a second thread compacts non-stop and the
journal threshold is tiny, so kills often land inside a compaction. In
"concurrent" mode WRITERS threads write at once, so their commits share fsyncs
(group commit) and kills land between a line's write and its fsync. In
"resume" mode snapshots are written in tiny parts, so a whole snapshot takes
longer than the test lets the process live; ``ready`` then says how many parts
an earlier run left (``ready 12``).
"""

from __future__ import annotations

import random
import sys
import threading
import time
import zlib
from pathlib import Path

from controller.store.db import Store

LIFETIME = 30.0  # seconds: the process ends itself if the test never kills it
WRITERS = 8  # threads in "concurrent" mode
RESUME_PART_RECORDS = 20  # records per snapshot part in "resume" mode: many parts, each fsynced
_SAY = threading.Lock()  # one whole line per print, whatever the thread


def record(key: str, tx: str, size: int, rng: random.Random) -> dict:
    body = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=rng.randint(10, 1200)))
    return {"id": key, "tx": tx, "size": size, "body": body, "crc": zlib.crc32(body.encode())}


def say(line: str) -> None:
    with _SAY:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def compact_forever(store: Store) -> None:
    while True:
        store.compact()


def write_until_deadline(store: Store, run: str, seed: int, deadline: float) -> None:
    """Insert small transactions and delete some, reporting each after it returned."""
    rng = random.Random(seed)
    mine: list[str] = []
    for number in range(10**9):
        if time.monotonic() > deadline:
            return
        if mine and rng.random() < 0.15:
            key = mine.pop(rng.randrange(len(mine)))
            say(f"try-del {key}")
            store.delete("records", key)
            say(f"del {key}")
            continue
        tx, size = f"{run}-{number}", rng.randint(1, 4)
        keys = [f"{tx}-{index}" for index in range(size)]
        with store.transaction():
            for key in keys:
                store.insert("records", key, record(key, tx, size, rng))
        say("ack " + " ".join(keys))
        mine.extend(keys)


def open_store(folder: str, mode: str) -> Store:
    if mode == "resume":
        return Store(folder, compact_min_bytes=16_000, snapshot_part_records=RESUME_PART_RECORDS)
    return Store(folder, compact_min_bytes=16_000 if mode == "compact" else 4 << 20)


def main(folder: str, mode: str, run: str, seed: int) -> None:
    parts = len(list(Path(folder).glob("snapshot-*.part-*")))
    store = open_store(folder, mode)
    if mode == "compact":
        threading.Thread(target=compact_forever, args=(store,), daemon=True).start()
    say(f"ready {parts}" if mode == "resume" else "ready")
    deadline = time.monotonic() + LIFETIME
    if mode != "concurrent":
        write_until_deadline(store, run, seed, deadline)
        return
    threads = [
        threading.Thread(
            target=write_until_deadline, args=(store, f"{run}t{index}", seed + index, deadline), daemon=True
        )
        for index in range(WRITERS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
