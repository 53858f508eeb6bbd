"""Policy engine: the role and access rules of the data model, one behaviour per test."""

from __future__ import annotations

import threading

import pytest

from controller.errors import FieldError
from controller.policy.engine import PolicyEngine
from controller.policy.kinds import (
    EDGE_ROUTER_POLICIES,
    EDGE_ROUTERS,
    IDENTITIES,
    POSTURE_CHECKS,
    SERVICE_EDGE_ROUTER_POLICIES,
    SERVICE_POLICIES,
    SERVICES,
)
from controller.policy.verify import problems


@pytest.fixture
def engine():
    created = PolicyEngine()
    yield created
    assert problems(created) == []


@pytest.fixture
def reports(engine):
    seen: list[set[str]] = []
    engine.add_listener(seen.append)
    return seen


def dial(engine, pid, identity_roles, service_roles, semantic="AllOf", checks=()):
    engine.upsert_service_policy(pid, "Dial", semantic, identity_roles, service_roles, checks)


# -- semantics (2.2) -----------------------------------------------------------------------
def test_all_of_requires_every_attribute(engine):
    engine.upsert_identity("both", ["a", "b"])
    engine.upsert_identity("one", ["a"])
    engine.upsert_service("s", [])
    dial(engine, "p", ["#a", "#b"], ["@s"])
    assert engine.identities_for_service("s") == {"both"}


def test_any_of_requires_one_attribute(engine):
    engine.upsert_identity("one", ["b"])
    engine.upsert_identity("none", ["c"])
    engine.upsert_service("s", [])
    dial(engine, "p", ["#a", "#b"], ["@s"], semantic="AnyOf")
    assert engine.identities_for_service("s") == {"one"}


def test_semantic_is_case_insensitive(engine):
    engine.upsert_identity("i", ["b"])
    engine.upsert_service("s", [])
    dial(engine, "p", ["#a", "#b"], ["@s"], semantic="anyof")
    assert engine.permissions("i", "s") == ["Dial"]


def test_all_matches_every_entity_including_later_ones(engine):
    engine.upsert_identity("early", [])
    engine.upsert_service("s", ["x"])
    dial(engine, "p", ["#all"], ["#all"])
    engine.upsert_identity("late", ["anything"])
    engine.upsert_service("t", [])
    assert engine.identities_for_service("t") == {"early", "late"}


def test_all_is_not_an_attribute_named_all(engine):
    engine.upsert_identity("i", ["all"])
    engine.upsert_identity("j", [])
    engine.upsert_service("s", [])
    dial(engine, "p", ["#all"], ["@s"])
    assert engine.role_filter(IDENTITIES, ["#all"]) == {"i"}
    assert engine.identities_for_service("s") == {"i", "j"}


def test_id_entries_ignore_the_semantic(engine):
    engine.upsert_identity("named", [])
    engine.upsert_identity("tagged", ["a", "b"])
    engine.upsert_service("s", [])
    dial(engine, "p", ["#a", "#b", "@named"], ["@s"])
    assert engine.identities_for_service("s") == {"named", "tagged"}


def test_empty_list_matches_nothing(engine):
    engine.upsert_identity("i", ["a"])
    engine.upsert_service("s", ["x"])
    dial(engine, "p", ["#a"], [])
    assert engine.services_for_identity("i") == set()
    assert engine.policy_members("p", SERVICES) == set()
    assert engine.policy_members("p", IDENTITIES) == {"i"}


# -- @id lifecycle and attribute changes (2.3) ---------------------------------------------
def test_id_of_an_entity_created_later_starts_matching(engine):
    dial(engine, "p", ["@future"], ["@svc"])
    assert engine.services_for_identity("future") == set()
    engine.upsert_identity("future", [])
    engine.upsert_service("svc", [])
    assert engine.services_for_identity("future") == {"svc"}


def test_deleted_entity_stops_matching_and_returns_if_recreated(engine):
    dial(engine, "p", ["@i"], ["#x"])
    engine.upsert_identity("i", [])
    engine.upsert_service("s", ["x"])
    engine.remove_identity("i")
    assert engine.identities_for_service("s") == set()
    assert engine.policies_of(IDENTITIES, "i", SERVICE_POLICIES) == set()
    engine.upsert_identity("i", ["other"])
    assert engine.identities_for_service("s") == {"i"}


def test_attribute_change_links_and_unlinks(engine):
    engine.upsert_identity("i", [])
    engine.upsert_service("s", [])
    dial(engine, "p", ["#a"], ["@s"])
    engine.upsert_identity("i", ["a"])
    assert engine.permissions("i", "s") == ["Dial"]
    engine.upsert_identity("i", ["b"])
    assert engine.permissions("i", "s") == []


def test_service_attribute_change_links_and_unlinks(engine):
    engine.upsert_identity("i", [])
    engine.upsert_service("s", [])
    dial(engine, "p", ["@i"], ["#web"])
    engine.upsert_service("s", ["web"])
    assert engine.services_for_identity("i") == {"s"}
    engine.upsert_service("s", [])
    assert engine.services_for_identity("i") == set()


def test_policy_edit_reevaluates_members(engine):
    engine.upsert_identity("i", ["a"])
    engine.upsert_identity("j", ["b"])
    engine.upsert_service("s", [])
    dial(engine, "p", ["#a"], ["@s"])
    dial(engine, "p", ["#b"], ["@s"])
    assert engine.identities_for_service("s") == {"j"}


def test_dropping_an_attribute_entry_keeps_the_id_entry(engine):
    engine.upsert_identity("i", ["a"])
    engine.upsert_service("s", [])
    dial(engine, "p", ["#a", "@i"], ["@s"], semantic="AnyOf")
    dial(engine, "p", ["@i"], ["@s"], semantic="AnyOf")
    assert engine.permissions("i", "s") == ["Dial"]


# -- access decisions (3) ------------------------------------------------------------------
def test_policy_type_change_moves_the_permission(engine):
    engine.upsert_identity("i", [])
    engine.upsert_service("s", [])
    engine.upsert_service_policy("p", "Dial", "AllOf", ["@i"], ["@s"], [])
    engine.upsert_service_policy("p", "Bind", "AllOf", ["@i"], ["@s"], [])
    assert engine.permissions("i", "s") == ["Bind"]
    assert engine.services_for_identity("i", "Dial") == set()
    assert engine.services_for_identity("i", "Bind") == {"s"}


def test_permissions_list_bind_before_dial(engine):
    engine.upsert_identity("i", [])
    engine.upsert_service("s", [])
    engine.upsert_service_policy("d", "Dial", "AllOf", ["@i"], ["@s"], [])
    engine.upsert_service_policy("b", "Bind", "AllOf", ["@i"], ["@s"], [])
    assert engine.permissions("i", "s") == ["Bind", "Dial"]
    assert engine.identities_for_service("s", "Bind") == {"i"}


def test_a_pair_granted_twice_survives_removing_one_policy(engine):
    engine.upsert_identity("i", ["a"])
    engine.upsert_service("s", ["x"])
    dial(engine, "p1", ["#a"], ["#x"])
    dial(engine, "p2", ["@i"], ["@s"])
    engine.remove_service_policy("p1")
    assert engine.permissions("i", "s") == ["Dial"]
    engine.remove_service_policy("p2")
    assert engine.permissions("i", "s") == []


def test_deleting_a_service_removes_access(engine):
    engine.upsert_identity("i", [])
    engine.upsert_service("s", ["x"])
    dial(engine, "p", ["@i"], ["#x"])
    engine.remove_service("s")
    assert engine.services_for_identity("i") == set()
    assert engine.permissions("i", "s") == []


def test_usable_edge_routers_are_the_intersection(engine):
    engine.upsert_identity("i", ["emp"])
    engine.upsert_service("s", ["web"])
    for router_id, attrs in (("r1", ["east"]), ("r2", ["east", "west"]), ("r3", ["west"])):
        engine.upsert_edge_router(router_id, attrs)
    engine.upsert_edge_router_policy("erp", "AnyOf", ["#emp"], ["#east"])
    engine.upsert_service_edge_router_policy("serp", "AnyOf", ["#web"], ["#west", "@r1"])
    assert engine.edge_routers_for_identity("i") == {"r1", "r2"}
    assert engine.edge_routers_for_service("s") == {"r1", "r2", "r3"}
    assert engine.usable_edge_routers("i", "s") == {"r1", "r2"}
    assert engine.identities_for_edge_router("r3") == set()
    assert engine.services_for_edge_router("r3") == {"s"}


def test_advice_reports_access_and_router_counts(engine):
    engine.upsert_identity("i", [])
    engine.upsert_service("s", [])
    engine.upsert_edge_router("r1", [])
    engine.upsert_edge_router("r2", [])
    engine.upsert_service_policy("b", "Bind", "AnyOf", ["@i"], ["@s"], [])
    engine.upsert_edge_router_policy("erp", "AnyOf", ["#all"], ["@r1", "@r2"])
    engine.upsert_service_edge_router_policy("serp", "AnyOf", ["@s"], ["@r2"])
    assert engine.advice("i", "s") == {
        "isDialAllowed": False,
        "isBindAllowed": True,
        "identityRouterCount": 2,
        "serviceRouterCount": 1,
        "commonRouterIds": ["r2"],
    }


def test_linking_policies_and_their_posture_checks(engine):
    engine.upsert_identity("i", ["a"])
    engine.upsert_service("s", [])
    engine.upsert_posture_check("os", ["strict"])
    engine.upsert_posture_check("mfa", [])
    engine.upsert_service_policy("p2", "Dial", "AllOf", ["#a"], ["@s"], ["#strict", "@mfa"])
    engine.upsert_service_policy("p1", "Bind", "AllOf", ["@i"], ["@s"], [])
    assert engine.service_policies_linking("i", "s") == ["p1", "p2"]
    assert engine.service_policies_linking("i", "s", "Dial") == ["p2"]
    assert engine.posture_checks_of_policy("p2") == {"os", "mfa"}
    assert engine.policies_of(POSTURE_CHECKS, "os", SERVICE_POLICIES) == {"p2"}
    engine.remove_posture_check("os")
    assert engine.posture_checks_of_policy("p2") == {"mfa"}


def test_ids_of_different_kinds_do_not_mix(engine):
    # A tunneler router's identity carries the router's id.
    engine.upsert_edge_router("x", ["r"])
    engine.upsert_identity("x", [])
    engine.upsert_edge_router_policy("x", "AnyOf", ["@x"], ["@x"])
    assert engine.edge_routers_for_identity("x") == {"x"}
    engine.remove_identity("x")
    assert engine.edge_routers_for_identity("x") == set()
    assert engine.policy_members("x", EDGE_ROUTERS) == {"x"}
    assert engine.policies_of(EDGE_ROUTERS, "x", EDGE_ROUTER_POLICIES) == {"x"}
    assert engine.policies_of(EDGE_ROUTERS, "x", SERVICE_EDGE_ROUTER_POLICIES) == set()


# -- attributes and roleFilter (2.6, 2.7) ----------------------------------------------------
def test_attributes_are_those_carried_by_entities(engine):
    engine.upsert_service("s1", ["web", "db"])
    engine.upsert_service("s2", ["web"])
    dial(engine, "p", ["#policy-only"], ["#also-policy-only"])
    assert engine.attributes(SERVICES) == ["db", "web"]
    assert engine.with_attribute(SERVICES, "web") == {"s1", "s2"}
    engine.remove_service("s1")
    assert engine.attributes(SERVICES) == ["web"]


def test_role_filter_semantics_and_ids(engine):
    engine.upsert_identity("ab", ["a", "b"])
    engine.upsert_identity("a", ["a"])
    engine.upsert_identity("c", ["c"])
    assert engine.role_filter(IDENTITIES, ["#a", "#b"]) == {"ab"}
    assert engine.role_filter(IDENTITIES, ["#a", "#b"], "AnyOf") == {"ab", "a"}
    assert engine.role_filter(IDENTITIES, ["@c", "@missing", "#b"]) == {"ab", "c"}
    assert engine.role_filter(IDENTITIES, []) == set()


def test_role_filter_rejects_other_entries(engine):
    with pytest.raises(FieldError) as info:
        engine.role_filter(IDENTITIES, ["plain"])
    assert info.value.field == "roleFilter"


# -- listener --------------------------------------------------------------------------------
def test_listener_hears_identities_gaining_and_losing_access(engine, reports):
    engine.upsert_identity("i", ["a"])
    engine.upsert_identity("j", [])
    engine.upsert_service("s", [])
    reports.clear()
    dial(engine, "p", ["#a"], ["@s"])
    assert reports == [{"i"}]
    engine.upsert_identity("i", [])
    assert reports[-1] == {"i"}
    engine.upsert_identity("j", ["a"])
    assert reports[-1] == {"j"}


def test_listener_hears_posture_changes_of_policies(engine, reports):
    engine.upsert_identity("i", ["a"])
    engine.upsert_service("s", [])
    engine.upsert_posture_check("c", [])
    dial(engine, "p", ["#a"], ["@s"], checks=["#strict"])
    reports.clear()
    engine.upsert_posture_check("c", ["strict"])
    assert reports == [{"i"}]


def test_listener_hears_router_changes(engine, reports):
    engine.upsert_identity("i", [])
    engine.upsert_edge_router_policy("erp", "AnyOf", ["@i"], ["#all"])
    reports.clear()
    engine.upsert_edge_router("r", [])
    assert reports == [{"i"}]


def test_listener_is_quiet_when_nothing_changes(engine, reports):
    engine.upsert_identity("i", ["a"])
    engine.upsert_service("s", [])
    dial(engine, "p", ["#a"], ["@s"])
    reports.clear()
    engine.upsert_identity("i", ["a"])
    dial(engine, "p", ["#a"], ["@s"])
    engine.upsert_identity("unrelated", ["z"])
    assert reports == []


def test_listeners_run_outside_the_engine_lock(engine):
    engine.upsert_identity("i", [])
    engine.upsert_service("s", [])
    answers = []

    def listener(ids):
        # Another thread can query while listeners run (no deadlock).
        reader = threading.Thread(target=lambda: answers.append(engine.permissions("i", "s")))
        reader.start()
        reader.join(timeout=5)

    engine.add_listener(listener)
    dial(engine, "p", ["@i"], ["@s"])
    assert answers == [["Dial"]]


def test_reads_during_writes_from_other_threads_stay_consistent(engine):
    for n in range(50):
        engine.upsert_identity(f"i{n}", ["a"] if n % 2 else [])
    engine.upsert_service("s", [])
    dial(engine, "p", ["#a"], ["@s"])
    errors = []

    def reader():
        try:
            for _ in range(300):
                assert len(engine.identities_for_service("s")) in (25, 26)
        except Exception as ex:  # surfaced in the main thread
            errors.append(ex)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for thread in threads:
        thread.start()
    for _ in range(300):
        engine.upsert_identity("i0", ["a"])
        engine.upsert_identity("i0", [])
    for thread in threads:
        thread.join()
    assert errors == []
