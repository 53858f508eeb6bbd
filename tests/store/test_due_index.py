"""DueIndex: the keys due by a time, as a scan of the table would find them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.store.db import Store
from controller.store.indexes import DueIndex

TIMES = st.sampled_from([f"2024-01-01T00:00:{n:02d}.000Z" for n in range(10)])
OPS = st.lists(st.tuples(st.sampled_from(["put", "delete", "due"]), st.sampled_from("abcdef"), TIMES), max_size=40)


@settings(deadline=None)
@given(OPS)
def test_due_returns_exactly_the_records_a_scan_finds_due(ops):
    store = Store(None)
    index = DueIndex(store, "t", lambda r: r.get("at"))
    store.add_listener(index.on_changes)  # as the registry registers it
    returned: set[str] = set()  # popped by due() and not changed since: not due again
    for op, key, when in ops:
        if op == "put":
            store.put("t", key, {"id": key, "at": when})
            returned.discard(key)
        elif op == "delete":
            store.delete("t", key)
            returned.discard(key)
        else:
            scan = {r["id"] for r in store.all("t") if r["at"] <= when} - returned
            assert sorted(index.due(when)) == sorted(scan)
            returned |= scan


def test_index_is_rebuilt_from_the_records_on_start():
    store = Store(None)
    store.put("t", "old", {"id": "old", "at": "2024-01-01T00:00:01.000Z"})
    store.put("t", "new", {"id": "new", "at": "2024-01-01T00:00:09.000Z"})
    index = DueIndex(store, "t", lambda r: r.get("at"))
    assert index.due("2024-01-01T00:00:05.000Z") == ["old"] and len(index) == 1
