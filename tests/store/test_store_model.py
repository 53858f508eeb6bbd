"""The store against a dict model: random commits, rollbacks, compactions and reopens."""

from __future__ import annotations

import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.store.db import Store
from tests.sizes import examples

KEYS = st.sampled_from(["a", "b", "c", "d"])
TABLES = st.sampled_from(["t", "u"])
RECORDS = st.dictionaries(
    st.sampled_from(["x", "y"]), st.none() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=5), max_size=2
)


def writes(min_size: int = 1, max_size: int = 4):
    """Lists of ("put", table, key, record) and ("delete", table, key, None) ops."""
    put = st.tuples(st.just("put"), TABLES, KEYS, RECORDS)
    delete = st.tuples(st.just("delete"), TABLES, KEYS, st.none())
    return st.lists(put | delete, min_size=min_size, max_size=max_size)


def steps(min_size: int = 1, max_size: int = 12):
    """Lists of (kind, ops): kind "commit", "abort" (raises inside), "compact" or "reopen"."""
    kind = st.sampled_from(["commit", "commit", "commit", "abort", "compact", "reopen"])
    return st.lists(st.tuples(kind, writes()), min_size=min_size, max_size=max_size)


class Abort(Exception):
    pass


def apply(target, ops) -> None:
    """Apply ops to a Store or to the model (a dict of (table, key) -> record)."""
    for verb, table, key, record in ops:
        if isinstance(target, Store) and verb == "put":
            target.put(table, key, record)
        elif isinstance(target, Store):
            target.delete(table, key)
        elif verb == "put":
            target[(table, key)] = record
        else:
            target.pop((table, key), None)


def contents(store: Store) -> dict:
    return {
        (table, key): store.get(table, key)
        for table in store.tables()
        for key in "abcd"
        if store.get(table, key) is not None
    }


@settings(max_examples=examples(60, 20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps())
def test_store_matches_a_dict_model_across_rollbacks_compactions_and_reopens(plan):
    model: dict = {}
    with tempfile.TemporaryDirectory() as folder:
        store = Store(folder, fsync=False, compact_min_bytes=200)
        try:
            for kind, ops in plan:
                if kind == "reopen":
                    store.close()
                    store = Store(folder, fsync=False, compact_min_bytes=200)
                elif kind == "compact":
                    store.compact()
                elif kind == "abort":
                    try:
                        with store.transaction():
                            apply(store, ops)
                            raise Abort()
                    except Abort:
                        pass
                else:
                    with store.transaction():
                        apply(store, ops)
                    apply(model, ops)
                assert contents(store) == model
        finally:
            store.close()
        with Store(folder) as reopened:
            assert contents(reopened) == model
