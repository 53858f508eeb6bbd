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
