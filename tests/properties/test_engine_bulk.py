"""A bulk-built engine (as on start) answers every query like one built by incremental upserts.

Both engines get the same random operations (including removes and retypes, which a
bulk load must also absorb); the bulk one builds its indexes once at the end.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.policy.engine import PolicyEngine
from controller.policy.verify import problems
from tests.properties.test_engine_oracle import (
    IDS,
    KINDS,
    LISTS,
    POLICY_IDS,
    SETTINGS,
    Harness,
    apply_to_engine,
    changes,
    check_all,
    concretize,
    networks,
)


def answers(engine: PolicyEngine) -> dict:
    """Every answer the engine's queries give on the test universe."""
    found = {}
    for n in IDS:
        for ptype in (None, "Dial", "Bind"):
            found["services", n, ptype] = engine.services_for_identity(n, ptype)
            found["identities", n, ptype] = engine.identities_for_service(n, ptype)
        for name in (
            "edge_routers_for_identity",
            "identities_for_edge_router",
            "edge_routers_for_service",
            "services_for_edge_router",
            "posture_checks_of_policy",
        ):
            found[name, n] = getattr(engine, name)(n)
        for s in IDS:
            found["pair", n, s] = (
                engine.permissions(n, s),
                engine.usable_edge_routers(n, s),
                engine.advice(n, s),
                [engine.service_policies_linking(n, s, t) for t in (None, "Dial", "Bind")],
            )
    for pkind, kinds in LISTS.items():
        found["policies", pkind] = engine.policy_ids(pkind)
        for kind in kinds:
            for pid in POLICY_IDS[pkind]:
                found["members", pid, kind] = engine.policy_members(pid, kind, pkind)
            for n in IDS:
                found["policies_of", kind, n, pkind] = engine.policies_of(kind, n, pkind)
    for kind in KINDS:
        found["entities", kind] = (engine.entity_ids(kind), engine.attributes(kind))
        found["filter", kind] = [
            engine.role_filter(kind, roles, semantic)
            for semantic in ("AllOf", "AnyOf")
            for roles in (["#a", "#b"], ["#all"], ["@n0", "#b"], [])
        ]
    return found


@SETTINGS
@given(networks(), st.lists(changes(), max_size=30))
def test_bulk_build_equals_incremental_upserts(network, steps):
    incremental = Harness()
    ops = []
    for op in network + steps:
        op = concretize(op, incremental.oracle)
        if op is not None:
            ops.append(op)
            incremental.step(op)
    bulk, reported = PolicyEngine(), set()
    bulk.add_listener(reported.update)
    with bulk.bulk():
        for op in ops:
            apply_to_engine(bulk, op)
    assert not problems(bulk), problems(bulk)
    check_all(bulk, incremental.oracle)
    assert answers(bulk) == answers(incremental.engine)
    # Listeners hear of every identity once, and later writes are incremental again.
    assert reported == set(incremental.oracle.entities["identities"])
    for op in steps:
        op = concretize(op, incremental.oracle)
        if op is not None:
            apply_to_engine(bulk, op)
            incremental.step(op)
    assert answers(bulk) == answers(incremental.engine)
    assert not problems(bulk)


def test_bulk_needs_an_empty_engine():
    engine = PolicyEngine()
    engine.upsert_identity("i1", ["a"])
    with pytest.raises(RuntimeError, match="empty engine"):
        with engine.bulk():
            pass
    assert engine.entity_ids("identities") == {"i1"}


def test_an_error_inside_bulk_still_leaves_consistent_indexes():
    engine = PolicyEngine()
    with pytest.raises(ValueError):
        with engine.bulk():
            engine.upsert_identity("i1", ["a"])
            engine.upsert_service("s1", ["b"])
            engine.upsert_service_policy("p1", "Dial", "AnyOf", ["#a"], ["#b"])
            raise ValueError("store read failed")
    assert engine.services_for_identity("i1") == {"s1"}
    assert not problems(engine)
    engine.remove_service("s1")
    assert engine.services_for_identity("i1") == set()
