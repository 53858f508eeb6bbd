"""The store's writes through PySyncObj's raft: three members in this process, each its own store folder."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from controller.cluster.replication import APPLIED, STATE_TABLE, RaftSettings, Replicator
from controller.errors import ClusterNoLeader, Conflict
from controller.store.db import Store
from harness.processes.routers import free_port

#: three members share one process (one GIL) on a busy machine: calmer elections than the defaults
FAST = RaftSettings(
    tick=0.002, append_entries=0.002, election_min=1.5, election_max=3.0, write_timeout=8.0, leader_fallback=3.0
)


class Members:
    def __init__(self, root: Path, size: int, settings: RaftSettings = FAST):
        self.root, self.settings = root, settings
        self.addresses = [f"127.0.0.1:{free_port()}" for _ in range(size)]
        self.stores: list[Store | None] = [None] * size
        self.replicators: list[Replicator | None] = [None] * size
        for index in range(size):
            self.start(index)

    def start(self, index: int) -> None:
        folder = self.root / f"m{index}"
        store = Store(folder / "db", fsync=False)
        partners = [a for a in self.addresses if a != self.addresses[index]]
        self.stores[index] = store
        self.replicators[index] = Replicator(
            store, folder / "raft", self.addresses[index], partners, member_id=f"m{index}", settings=self.settings
        )

    def stop(self, index: int) -> None:
        self.replicators[index].close()
        self.stores[index].close()
        self.replicators[index] = self.stores[index] = None

    def leader(self, timeout: float = 30.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for index, replicator in enumerate(self.replicators):
                if replicator is not None and replicator.is_leader:
                    return index
            time.sleep(0.01)
        raise AssertionError("no leader")

    def settle(self, table: str, count: int, timeout: float = 30.0) -> list[int]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            counts = [s.count(table) for s in self.stores if s is not None]
            if all(c == count for c in counts):
                return counts
            time.sleep(0.01)
        return [s.count(table) for s in self.stores if s is not None]

    def close(self) -> None:
        for index, store in enumerate(self.stores):
            if store is not None:
                self.stop(index)


@pytest.fixture
def members(tmp_path):
    group = Members(tmp_path, 3)
    group.leader()
    yield group
    group.close()


def test_a_write_on_any_member_is_in_every_members_own_store(members):
    follower = next(i for i in range(3) if i != members.leader())
    members.stores[follower].insert("identities", "a", {"id": "a", "name": "one"})
    # read-your-writes: the writer's own store has it when the write returns
    assert members.stores[follower].get("identities", "a") == {"id": "a", "name": "one"}
    assert members.settle("identities", 1) == [1, 1, 1]
    indexes = {s.get(STATE_TABLE, APPLIED)["index"] for s in members.stores}
    assert len(indexes) == 1


def test_a_write_that_creates_then_changes_one_record_applies_on_every_member(members):
    """One transaction writing a record twice (CA auto-enrollment creates an identity, then updates it)."""
    follower = next(i for i in range(3) if i != members.leader())
    store = members.stores[follower]
    with store.transaction():
        store.insert("identities", "a", {"id": "a", "name": "new"})
        store.put("identities", "a", {"id": "a", "name": "enrolled"})
        store.insert("authenticators", "b", {"id": "b", "identity_id": "a"})
    assert members.settle("authenticators", 1) == [1, 1, 1]
    assert [s.get("identities", "a") for s in members.stores] == [{"id": "a", "name": "enrolled"}] * 3


def test_concurrent_writes_of_one_record_on_two_members_apply_once(members):
    members.stores[0].insert("identities", "a", {"id": "a", "n": 0})
    members.settle("identities", 1)
    results: list = []

    def patch(index: int) -> None:
        try:
            members.stores[index].put("identities", "a", {"id": "a", "n": index})
            results.append(index)
        except Conflict:
            results.append("conflict")

    threads = [threading.Thread(target=patch, args=(i,)) for i in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len({repr(s.get("identities", "a")) for s in members.stores}) > 1:
        time.sleep(0.01)
    values = [s.get("identities", "a") for s in members.stores]
    assert values[0] == values[1] == values[2]
    winners = [r for r in results if r != "conflict"]
    assert values[0]["n"] in winners and len(winners) >= 1


def test_without_a_quorum_a_write_fails_with_the_real_code_and_reads_go_on(members):
    members.stores[0].insert("identities", "a", {"id": "a"})
    members.settle("identities", 1)
    members.stop(1)
    members.stop(2)
    with pytest.raises(ClusterNoLeader) as caught:
        members.stores[0].insert("identities", "b", {"id": "b"})
    assert caught.value.code == "CLUSTER_NO_LEADER"
    assert members.stores[0].get("identities", "a") == {"id": "a"}
    assert members.stores[0].get("identities", "b") is None


def test_a_restarted_member_catches_up_from_its_own_store_and_the_log(members):
    members.stop(2)
    for n in range(20):
        members.stores[n % 2].insert("identities", f"i{n}", {"id": f"i{n}"})
    members.start(2)
    assert members.settle("identities", 20) == [20, 20, 20]
    members.stores[2].insert("identities", "late", {"id": "late"})
    assert members.settle("identities", 21) == [21, 21, 21]


def test_a_member_far_behind_loads_a_snapshot(tmp_path):
    group = Members(
        tmp_path,
        3,
        RaftSettings(
            tick=0.002,
            append_entries=0.002,
            election_min=1.5,
            election_max=3.0,
            write_timeout=8.0,
            compaction_entries=10,
        ),
    )
    try:
        group.leader()
        group.stop(2)
        for n in range(60):
            group.stores[n % 2].insert("identities", f"i{n}", {"id": f"i{n}"})
        assert any((tmp_path / f"m{i}" / "raft" / "raft.snapshot").exists() for i in (0, 1))
        group.start(2)
        assert group.settle("identities", 60, timeout=30) == [60, 60, 60]
    finally:
        group.close()


def test_concurrent_writes_from_threads_on_every_member_are_all_applied_in_one_order(members):
    """Group commit: threads on each member write at once; every write is on every member, in the same order."""
    per_thread, threads_per_member = 25, 3
    errors: list = []

    def write(member: int, thread: int) -> None:
        store = members.stores[member]
        try:
            for n in range(per_thread):
                key = f"m{member}-t{thread}-{n}"
                store.insert("identities", key, {"id": key, "n": n})
                assert store.get("identities", key) == {"id": key, "n": n}  # read-your-writes at once
        except Exception as ex:  # pragma: no cover - shown by the assertion below
            errors.append(ex)

    threads = [threading.Thread(target=write, args=(m, t)) for m in range(3) for t in range(threads_per_member)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
    total = 3 * threads_per_member * per_thread
    assert members.settle("identities", total) == [total] * 3
    orders = [[r["id"] for r in store.all("identities")] for store in members.stores]
    assert orders[0] == orders[1] == orders[2]  # applied in the log's order on every member
    indexes = [store.get(STATE_TABLE, APPLIED) for store in members.stores]
    assert indexes[0] == indexes[1] == indexes[2]
    assert indexes[0]["index"] < total  # commits made while an entry was in flight went together


def test_a_write_computed_from_a_record_changed_meanwhile_is_refused_on_every_member(members):
    """What a transaction read is a precondition: a write based on a stale read applies nowhere."""
    leader = members.leader()
    reader, other = [i for i in range(3) if i != leader]
    members.stores[reader].insert("limits", "x", {"id": "x", "max": 1})
    members.settle("limits", 1)
    store = members.stores[reader]
    with pytest.raises(Conflict):
        with store.lock, store.transaction():
            seen = store.get("limits", "x")
            # another member changes x while this transaction is open (this member applies it after)
            members.stores[other].put("limits", "x", {"id": "x", "max": 0})
            store.insert("grants", "g", {"id": "g", "allowedBy": seen["max"]})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(s.get("limits", "x")["max"] != 0 for s in members.stores):
        time.sleep(0.01)
    assert [s.get("limits", "x")["max"] for s in members.stores] == [0, 0, 0]
    assert [s.get("grants", "g") for s in members.stores] == [None, None, None]


def test_two_creates_of_one_unique_name_on_one_member_keep_one(members):
    """A unique index's answer is a precondition too: the second create of a name, computed before the
    first applied, is refused."""
    from controller.store.indexes import UniqueIndex

    follower = next(i for i in range(3) if i != members.leader())
    indexes = [UniqueIndex(s, "identities", lambda r: r.get("name")) for s in members.stores]
    for s, index in zip(members.stores, indexes):
        s.add_listener(index.on_changes)  # as the registry registers it
    store, names = members.stores[follower], indexes[follower]
    other = next(i for i in range(3) if i not in (follower, members.leader()))
    with pytest.raises(Conflict):
        with store.lock, store.transaction():
            assert names.get("dup") is None
            members.stores[other].insert("identities", "a", {"id": "a", "name": "dup"})
            store.insert("identities", "b", {"id": "b", "name": "dup"})
    members.settle("identities", 1)
    assert [sorted(r["id"] for r in s.all("identities")) for s in members.stores] == [["a"]] * 3
