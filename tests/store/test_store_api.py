"""Store API behaviour: reads, writes, transactions and listeners, in memory and on disk."""

from __future__ import annotations

import threading

import pytest
from tinydb import Query

from controller.errors import Unavailable
from controller.store.db import Change, ChangeContext, NotNow, Store


@pytest.fixture(params=["memory", "folder"])
def store(request, tmp_path):
    """A fresh store, once in memory and once over a folder (fsync off: speed only)."""
    instance = Store(None if request.param == "memory" else tmp_path / "data", fsync=False)
    yield instance
    instance.close()


def test_insert_then_get_returns_an_equal_record(store):
    store.insert("identities", "id1", {"name": "alice", "roles": ["a", "b"], "meta": {"n": 1}})

    assert store.get("identities", "id1") == {"name": "alice", "roles": ["a", "b"], "meta": {"n": 1}}
    assert store.get("identities", "missing") is None
    assert store.get("no-such-table", "id1") is None


def test_insert_of_an_existing_key_raises_key_error_and_keeps_the_record(store):
    store.insert("identities", "id1", {"name": "alice"})

    with pytest.raises(KeyError):
        store.insert("identities", "id1", {"name": "bob"})

    assert store.get("identities", "id1") == {"name": "alice"}


def test_put_inserts_or_replaces_the_whole_record(store):
    store.put("services", "s1", {"name": "web", "port": 80})
    store.put("services", "s1", {"name": "web2"})

    assert store.get("services", "s1") == {"name": "web2"}
    assert store.count("services") == 1


def test_delete_returns_the_removed_record_or_none(store):
    store.put("services", "s1", {"name": "web"})

    assert store.delete("services", "s1") == {"name": "web"}
    assert store.delete("services", "s1") is None
    assert store.get("services", "s1") is None


def test_all_count_and_tables_reflect_the_records(store):
    for index in range(5):
        store.put("identities", f"i{index}", {"n": index})
    store.put("services", "s1", {})
    store.delete("services", "s1")

    assert sorted(record["n"] for record in store.all("identities")) == [0, 1, 2, 3, 4]
    assert store.count("identities") == 5
    assert store.count("services") == 0
    assert store.tables() == ["identities"]
    assert store.all("nothing") == []


def test_all_is_a_snapshot_unaffected_by_later_writes(store):
    store.put("t", "a", {"v": 1})

    listed = store.all("t")
    store.put("t", "b", {"v": 2})

    assert listed == [{"v": 1}]


def test_values_is_a_view_for_lock_holders(store):
    store.put("t", "a", {"v": 1})

    with store.lock:
        assert [record["v"] for record in store.values("t")] == [1]
    assert list(store.values("missing")) == []


def test_stored_record_is_a_copy_of_what_the_caller_passed(store):
    record = {"tags": {"k": "v"}, "list": (1, 2)}
    store.put("t", "a", record)

    record["tags"]["k"] = "changed"

    assert store.get("t", "a") == {"tags": {"k": "v"}, "list": [1, 2]}


def test_non_json_records_and_bad_keys_are_refused_without_a_change(store):
    with pytest.raises(TypeError):
        store.put("t", "a", {"when": {1, 2}})
    with pytest.raises(TypeError):
        store.put("t", 7, {})
    with pytest.raises(TypeError):
        store.put("t", "a", ["not", "a", "dict"])
    with pytest.raises(TypeError):  # orjson holds integers to 64 bits
        store.put("t", "a", {"big": 2**64})

    assert store.tables() == []


def test_transaction_commits_all_writes_together(store):
    with store.transaction():
        store.put("t", "a", {"v": 1})
        store.put("t", "b", {"v": 2})
        store.delete("t", "a")

    assert store.all("t") == [{"v": 2}]


def test_exception_in_transaction_rolls_back_every_change(store):
    store.put("t", "a", {"v": 1})

    with pytest.raises(RuntimeError):
        with store.transaction():
            store.put("t", "a", {"v": 99})
            store.put("t", "b", {"v": 2})
            store.delete("t", "a")
            store.put("u", "c", {})
            raise RuntimeError("boom")

    assert store.get("t", "a") == {"v": 1}
    assert store.get("t", "b") is None
    assert store.tables() == ["t"]


def test_nested_transactions_commit_once_at_the_outermost(store):
    commits: list[list[Change]] = []
    store.add_listener(commits.append)

    with store.transaction():
        store.put("t", "a", {"v": 1})
        with store.transaction():
            store.put("t", "b", {"v": 2})
        assert commits == []

    assert [[change.key for change in commit] for commit in commits] == [["a", "b"]]


def test_changes_carry_their_transactions_context_and_nested_ones_inherit_it(store):
    commits: list[list[Change]] = []
    store.add_listener(commits.append)
    outer, inner = ChangeContext.rest("POST", "/a", "r1", "127.0.0.1"), ChangeContext("router")

    with store.transaction(outer):
        store.put("t", "a", {"v": 1})
        with store.transaction():
            store.put("t", "b", {"v": 2})
        with store.transaction(inner):
            store.put("t", "c", {"v": 3})
        store.put("t", "d", {"v": 4})
    store.put("t", "e", {"v": 5})

    assert [[(change.key, change.context) for change in commit] for commit in commits] == [
        [("a", outer), ("b", outer), ("c", inner), ("d", outer)],
        [("e", None)],
    ]


def test_inner_transaction_failure_caught_inside_undoes_only_the_inner_writes(store):
    with store.transaction():
        store.put("t", "a", {"v": 1})
        with pytest.raises(ValueError):
            with store.transaction():
                store.put("t", "b", {"v": 2})
                raise ValueError("inner")
        store.put("t", "c", {"v": 3})

    assert [store.get("t", key) for key in "abc"] == [{"v": 1}, None, {"v": 3}]


def test_listeners_receive_the_ordered_changes_of_each_commit(store):
    seen: list[list[Change]] = []
    store.add_listener(seen.append)
    store.put("t", "a", {"v": 1})

    with store.transaction():
        store.put("t", "a", {"v": 2})
        store.delete("t", "a")
    store.delete("t", "missing")

    assert seen == [
        [Change("t", "a", None, {"v": 1})],
        [Change("t", "a", {"v": 1}, {"v": 2}), Change("t", "a", {"v": 2}, None)],
    ]


def test_listeners_are_not_called_for_a_rolled_back_transaction(store):
    seen: list = []
    store.add_listener(seen.append)

    with pytest.raises(KeyError):
        with store.transaction():
            store.put("t", "a", {})
            store.insert("t", "a", {})

    assert seen == []
    assert store.get("t", "a") is None


def test_listeners_run_under_the_lock_and_a_failing_one_does_not_undo_the_commit(store):
    held: list[bool] = []

    def failing(changes):
        raise RuntimeError("listener bug")

    def probe(changes):  # another thread cannot take the lock while listeners run
        other = threading.Thread(target=lambda: held.append(not store.lock.acquire(blocking=False)))
        other.start()
        other.join()

    store.add_listener(failing)
    store.add_listener(probe)
    store.put("t", "a", {"v": 1})

    assert held == [True]
    assert store.get("t", "a") == {"v": 1}


def test_tinydb_table_queries_and_stock_writes_go_through_the_store(store):
    store.put("identities", "i1", {"name": "alice", "admin": True})
    store.put("identities", "i2", {"name": "bob", "admin": False})
    seen: list = []
    store.add_listener(seen.append)

    found = store.table("identities").search(Query().admin == True)  # noqa: E712
    store.table("identities").update({"admin": True}, Query().name == "bob")

    assert [(doc.doc_id, doc["name"]) for doc in found] == [("i1", "alice")]
    assert store.get("identities", "i2") == {"name": "bob", "admin": True}
    assert seen == [[Change("identities", "i2", {"name": "bob", "admin": False}, {"name": "bob", "admin": True})]]


def test_writes_after_close_raise_unavailable(store):
    store.put("t", "a", {})
    store.close()

    with pytest.raises(Unavailable):
        store.put("t", "b", {})
    assert store.get("t", "a") == {}


def test_in_memory_store_writes_no_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = Store()

    store.put("t", "a", {"v": 1})
    store.compact()
    store.close()

    assert list(tmp_path.iterdir()) == []


def test_fsyncs_counts_journal_syncs_a_lone_commit_waiting_for_its_own(tmp_path):
    with Store(tmp_path) as store:
        before = store.fsyncs
        for number in range(5):
            store.put("things", f"k{number}", {"n": number})
        assert store.fsyncs - before == 5
    with Store(tmp_path / "quick", fsync=False) as unsynced:
        unsynced.put("things", "k", {})
        assert unsynced.fsyncs == 0
    assert Store(None).fsyncs == 0


def test_reading_now_refuses_at_once_while_another_thread_holds_the_lock(store):
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with store.lock:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        with pytest.raises(NotNow, match="busy"):
            with store.reading_now():
                pytest.fail("reading_now went in while another thread held the lock")
    finally:
        release.set()
        holder.join(10)
    with store.reading_now():  # free again: in, and reads as ever
        assert store.get("identities", "none") is None


def test_a_write_under_reading_now_raises_not_now_and_writes_nothing(store):
    store.insert("identities", "id1", {"name": "alice"})
    seen: list = []
    store.add_listener(seen.append)

    for write in (
        lambda: store.put("identities", "id1", {"name": "bob"}),
        lambda: store.insert("identities", "id2", {"name": "carol"}),
        lambda: store.delete("identities", "id1"),
    ):
        with pytest.raises(NotNow, match="a write"):
            with store.reading_now():
                write()

    assert store.all("identities") == [{"name": "alice"}]
    assert seen == []
    store.put("identities", "id1", {"name": "bob"})  # outside it, writes go on as ever
    assert store.get("identities", "id1") == {"name": "bob"}
