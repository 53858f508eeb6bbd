"""Indexed filtered lists return exactly what a scan of the table returns."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.store.db import Store
from controller.store.filter_index import FilterIndex
from controller.store.query import Field, FieldSet, list_page
from tests.sizes import examples

FIELDS = FieldSet(
    [
        Field("name", "string", lambda r: r.get("name")),
        Field("kind", "string", lambda r: r.get("kind")),
        Field("roleAttributes", "set", lambda r: r.get("role_attributes") or [], sortable=False),
        Field("cost", "int", lambda r: r.get("cost")),
    ]
)
KEYS = [f"k{n}" for n in range(12)]
words = st.sampled_from(["abc", "abcd", "bcd", "xab", "ab", "zzz", "5", "", "abcabc"])
values = st.one_of(words, st.integers(0, 6), st.booleans(), st.none())
records = st.fixed_dictionaries(
    {
        "name": st.one_of(words, st.integers(0, 6)),
        "kind": values,
        "cost": st.integers(0, 6),
        "role_attributes": st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=3, unique=True),
        "tags": st.dictionaries(st.sampled_from(["env", "team"]), values, max_size=2),
    }
)
text = words.map(json.dumps)
literals = st.one_of(text, st.integers(0, 6).map(str), st.sampled_from(["true", "false", "null"]))
leaves = st.one_of(
    st.builds("name = {}".format, literals),
    st.builds("kind = {}".format, literals),
    st.builds("name contains {}".format, text),
    st.builds("name icontains {}".format, text),
    st.builds('id = "{}"'.format, st.sampled_from(KEYS)),
    st.builds('id in ["{}", "{}"]'.format, st.sampled_from(KEYS), st.sampled_from(KEYS)),
    st.builds("name in [{}, {}]".format, text, st.integers(0, 6).map(str)),
    st.builds('anyOf(roleAttributes) = "{}"'.format, st.sampled_from("abcde")),
    st.builds('anyOf(roleAttributes) in ["{}", "{}"]'.format, st.sampled_from("abcde"), st.sampled_from("abcde")),
    st.builds('allOf(roleAttributes) = "{}"'.format, st.sampled_from("abcde")),
    st.builds("tags.{} = {}".format, st.sampled_from(["env", "team"]), literals),
    st.builds("cost > {}".format, st.integers(0, 6)),
)
filters = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.builds("{} and {}".format, inner, inner),
        st.builds("({}) or ({})".format, inner, inner),
        st.builds("not ({})".format, inner),
    ),
    max_leaves=4,
)
writes = st.lists(st.tuples(st.sampled_from(KEYS), st.one_of(st.none(), records)), max_size=8)


def page(candidates, store, text_filter):
    chosen = store.all("t") if candidates is None else candidates
    try:
        result = list_page(chosen, FIELDS, filter=text_filter, limit=-1, sort="name, id")
    except Exception as ex:  # noqa: BLE001 -- the error itself is compared
        return type(ex).__name__, str(ex)
    return [r["id"] for r in result.items], result.total


@settings(max_examples=examples(300, 40), deadline=None)
@given(st.lists(records, max_size=12), filters, writes, filters)
def test_indexed_lists_equal_scanned_lists_before_and_after_writes(initial, first, later, second):
    store = Store(None)
    for key, record in zip(KEYS, initial):
        store.put("t", key, {**record, "id": key})
    index = FilterIndex(store, "t", FIELDS)
    store.add_listener(index.on_changes)  # as the registry registers it
    assert page(index.candidates(first), store, first) == page(None, store, first)
    for key, record in later:  # the indexes built above must follow these
        if record is None:
            store.delete("t", key)
        else:
            store.put("t", key, {**record, "id": key})
    for text_filter in (first, second):
        assert page(index.candidates(text_filter), store, text_filter) == page(None, store, text_filter)


def test_common_filters_are_answered_from_indexes_not_scans():
    store = Store(None)
    with store.transaction():
        for n in range(2000):
            store.put(
                "t",
                f"k{n}",
                {
                    "id": f"k{n}",
                    "name": f"thing-{n:05d}",
                    "kind": "x",
                    "role_attributes": [f"r{n % 100}"],
                    "tags": {"env": f"e{n % 50}"},
                },
            )
    index = FilterIndex(store, "t", FIELDS)
    for text_filter, expected in [
        ('name = "thing-00042"', 1),
        ('name contains "g-0004"', 10),
        ('id in ["k1", "k2", "nope"]', 2),
        ('anyOf(roleAttributes) = "r7"', 20),
        ('tags.env = "e3" and kind = "x"', 40),
    ]:
        candidates = index.candidates(text_filter)
        assert candidates is not None and expected <= len(candidates) <= expected + 16, text_filter
    assert index.candidates('kind = "x" or cost > 1') is None  # one unindexed alternative: a scan
