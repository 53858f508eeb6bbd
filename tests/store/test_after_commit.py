"""``Store.after_commit``: a listener schedules its write instead of writing mid-notification."""

from __future__ import annotations

from controller.store.db import Store


def test_scheduled_work_runs_after_every_listener_of_the_commit_as_its_own_transaction():
    store, seen = Store(None), []

    def cascade():
        store.delete("things", "a")

    def first(changes):
        seen.append(("first", [(c.table, c.key, c.new is None) for c in changes]))
        if any(c.new is not None and c.key == "a" for c in changes):
            store.after_commit(cascade)
            store.after_commit(cascade)  # scheduled twice, runs once

    def second(changes):
        seen.append(("second", [(c.table, c.key, c.new is None) for c in changes]))

    store.add_listener(first)
    store.add_listener(second)
    store.insert("things", "a", {"id": "a"})
    assert seen == [
        ("first", [("things", "a", False)]),
        ("second", [("things", "a", False)]),  # the second listener saw the insert before the cascade ran
        ("first", [("things", "a", True)]),
        ("second", [("things", "a", True)]),
    ]
    assert store.get("things", "a") is None


def test_work_scheduled_by_scheduled_work_runs_too_and_a_failure_is_logged_not_raised(caplog):
    store, ran = Store(None), []

    def boom():
        ran.append("boom")
        raise RuntimeError("scheduled work failed")

    def chain():
        ran.append("chain")
        store.insert("things", "c", {"id": "c"})

    def listener(changes):
        keys = {c.key for c in changes}
        if "b" in keys:
            store.after_commit(boom)
            store.after_commit(chain)
        if "c" in keys:
            store.after_commit(lambda: ran.append("after c"))

    store.add_listener(listener)
    store.insert("things", "b", {"id": "b"})
    assert ran == ["boom", "chain", "after c"]
    assert store.get("things", "c") == {"id": "c"}
    assert "after-commit work" in caplog.text
