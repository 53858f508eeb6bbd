"""The index behind the declared delete cascades holds the committed state, however it is first built."""

from __future__ import annotations

import pytest

from controller.entities import Ref
from controller.model.cascades import ReferenceIndex
from controller.store.db import Store

OWNER = Ref("identity_id", "identities")


class Boom(Exception):
    pass


@pytest.fixture
def store():
    store = Store(None)
    with store.transaction():
        store.insert("authenticators", "a1", {"id": "a1", "identity_id": "i1"})
    return store


def test_a_build_inside_a_transaction_that_rolls_back_keeps_the_committed_holders(store):
    index = ReferenceIndex(store, [("authenticators", OWNER)])
    store.add_listener(index.on_changes)  # as the registry registers it
    with pytest.raises(Boom), store.transaction():
        store.put("authenticators", "a1", {"id": "a1", "identity_id": "i2"})
        store.insert("authenticators", "a2", {"id": "a2", "identity_id": "i2"})
        assert index.holders("authenticators", OWNER, "i2") == []  # built here, from the committed state
        raise Boom()

    assert index.holders("authenticators", OWNER, "i1") == ["a1"]
    assert index.holders("authenticators", OWNER, "i2") == []


def test_a_build_inside_a_transaction_that_commits_follows_its_changes(store):
    index = ReferenceIndex(store, [("authenticators", OWNER)])
    store.add_listener(index.on_changes)  # as the registry registers it
    with store.transaction():
        store.insert("authenticators", "a2", {"id": "a2", "identity_id": "i1"})
        store.put("authenticators", "a1", {"id": "a1", "identity_id": "i3"})
        assert index.holders("authenticators", OWNER, "i1") == ["a1"]

    assert index.holders("authenticators", OWNER, "i1") == ["a2"]
    assert index.holders("authenticators", OWNER, "i3") == ["a1"]
    with store.transaction():
        store.delete("authenticators", "a2")
    assert index.holders("authenticators", OWNER, "i1") == []
