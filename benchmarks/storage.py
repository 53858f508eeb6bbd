"""Cost of one durable write against the size of the store.

Run: ``python -m benchmarks.storage``. The store's promise is that a durable
insert at 50,000 records costs within 1.5x of one at 1,000.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

from controller.store.db import Store

TABLE = "identities"
PRELOAD_BATCH = 5000  # records per transaction while preloading: one journal line each


def identity(number: int, prefix: str = "id") -> dict:
    """A record the size and shape of a stored identity (about 700 bytes of JSON)."""
    key = f"{prefix}{number:08d}"
    return {
        "id": key,
        "name": f"identity-{key}",
        "type": "Default",
        "is_admin": False,
        "is_default_admin": False,
        "role_attributes": ["employees", f"team-{number % 40}", "laptops"],
        "auth_policy_id": "default",
        "default_hosting_precedence": "default",
        "default_hosting_cost": 0,
        "service_hosting_precedences": {},
        "service_hosting_costs": {},
        "external_id": None,
        "disabled": False,
        "disabled_at": None,
        "disabled_until": None,
        "app_data": {"department": "engineering", "location": "site-3"},
        "tags": {"owner": "ops", "env": "prod"},
        "env_info": {"arch": "amd64", "os": "linux", "osRelease": "6.1", "osVersion": "12"},
        "sdk_info": {"appId": "tunneler", "appVersion": "1.2.3", "type": "ziti-sdk-golang", "version": "0.23"},
        "created_at": "2024-05-01T12:00:00.000Z",
        "updated_at": "2024-05-01T12:00:00.000Z",
    }


def preload(store: Store, count: int) -> None:
    """Fill the store with ``count`` identities in a few large transactions, then compact."""
    for start in range(0, count, PRELOAD_BATCH):
        with store.transaction():
            for number in range(start, min(count, start + PRELOAD_BATCH)):
                store.insert(TABLE, f"id{number:08d}", identity(number))
    store.compact()  # so no compaction is due while measuring


def write_cost(n_existing: int, n_writes: int = 200, folder=None, *, fsync: bool = True) -> float:
    """Mean seconds per durable insert into a store already holding ``n_existing`` records."""
    own = folder is None
    path = Path(tempfile.mkdtemp(prefix="store-bench-")) if own else Path(folder)
    try:
        with Store(path, fsync=fsync) as store:
            preload(store, n_existing)
            for number in range(20):  # warm up: first segment, caches
                store.insert(TABLE, f"warm{number}", identity(number, "warm"))
            records = [identity(number, "new") for number in range(n_writes)]
            costs = []
            for record in records:
                started = time.perf_counter()
                store.insert(TABLE, record["id"], record)
                costs.append(time.perf_counter() - started)
        return statistics.fmean(costs)
    finally:
        if own:
            shutil.rmtree(path, ignore_errors=True)


def main(repeats: int = 3) -> None:
    """Print the figures; each is the best of ``repeats`` means (the disk is shared)."""
    for fsync in (True, False):
        label = "durable (fsync)" if fsync else "no fsync (CPU only)"
        small = min(write_cost(1_000, fsync=fsync) for _ in range(repeats))
        large = min(write_cost(50_000, fsync=fsync) for _ in range(repeats))
        print(
            f"{label:>20}: {small * 1e3:.3f} ms/insert at 1,000, "
            f"{large * 1e3:.3f} ms/insert at 50,000, ratio {large / small:.2f}"
        )


if __name__ == "__main__":
    main()
