"""``Indexes``: every index behind one store listener, each handed the changes to its own table."""

from __future__ import annotations

from controller.store.db import Store
from controller.store.indexes import Indexes, MultiIndex, UniqueIndex


def test_one_listener_keeps_indexes_of_several_tables_in_step_through_one_commit():
    store = Store(None)
    store.put("people", "p0", {"id": "p0", "team": "red"})  # before the index: read when it is built
    by_team = MultiIndex(store, "people", lambda r: r.get("team"))
    by_name = UniqueIndex(store, "teams", lambda r: r.get("name"))
    store.add_listener(Indexes([by_team, by_name]).on_changes)
    with store.transaction():
        store.put("people", "p1", {"id": "p1", "team": "red"})
        store.put("teams", "t1", {"id": "t1", "name": "red"})
        store.put("other", "o1", {"id": "o1", "team": "red", "name": "red"})  # no index follows this table
        store.put("people", "p0", {"id": "p0", "team": "blue"})
    assert (by_team.get("red"), by_team.get("blue"), by_name.get("red")) == ({"p1"}, {"p0"}, "t1")
    store.delete("teams", "t1")
    assert by_name.get("red") is None and by_team.get("red") == {"p1"}


def test_what_get_returned_stays_as_it_was_while_a_commit_changes_the_index():
    """Listing edge routers once answered 500 ("Set changed size during iteration"): it iterated the index's own
    set, without the store lock, while another thread created a router. ``get`` hands out a copy."""
    store = Store(None)
    by_team = MultiIndex(store, "people", lambda r: r.get("team"))
    store.add_listener(by_team.on_changes)
    for key in ("p0", "p1", "p2"):
        store.put("people", key, {"id": key, "team": "red"})
    seen = []
    for key in by_team.get("red"):
        store.put("people", f"new-{key}", {"id": f"new-{key}", "team": "red"})  # a commit while it is iterated
        store.delete("people", key)
        seen.append(key)
    assert sorted(seen) == ["p0", "p1", "p2"]
    assert by_team.get("red") == {"new-p0", "new-p1", "new-p2"} and by_team.keys() == ["red"]
