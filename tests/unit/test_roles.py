"""Role lists: validation errors as the real controller words them, matching, display."""

from __future__ import annotations

import pytest

from controller.errors import FieldError
from controller.policy.roles import matches, normalize_semantic, roles_display, validate_role_attributes, validate_roles


def no_missing(ids):
    return []


# -- validate_roles ----------------------------------------------------------------------
def test_role_lists_come_back_sorted_and_deduplicated():
    assert validate_roles(["@b", "#z", "#a", "@b"], "identityRoles", no_missing) == ["#a", "#z", "@b"]


def test_absent_role_list_is_empty():
    assert validate_roles(None, "serviceRoles", no_missing) == []


def test_entry_without_prefix_is_rejected_with_the_offending_entries():
    with pytest.raises(FieldError) as info:
        validate_roles(["#ok", "plain", "also"], "serviceRoles", no_missing)
    assert info.value.field == "serviceRoles"
    assert "prefixed with #" in info.value.reason
    assert info.value.value == ["plain", "also"]
    assert info.value.code == "COULD_NOT_VALIDATE"


def test_non_string_entry_is_rejected():
    with pytest.raises(FieldError):
        validate_roles([7], "serviceRoles", no_missing)


def test_all_must_stand_alone():
    assert validate_roles(["#all"], "identityRoles", no_missing) == ["#all"]
    with pytest.raises(FieldError) as info:
        validate_roles(["#all", "#other"], "identityRoles", no_missing)
    assert info.value.field == "identityRoles"
    assert info.value.reason == "if using #all, it should be the only role specified"


def test_unknown_ids_are_rejected_naming_the_kind():
    seen = []

    def missing(ids):
        seen.append(ids)
        return [i for i in ids if i != "known"]

    with pytest.raises(FieldError) as info:
        validate_roles(["@known", "@ghost", "#attr"], "edgeRouterRoles", missing)
    assert seen == [["ghost", "known"]]
    assert info.value.reason == "no routers found with the given ids"
    assert info.value.value == ["ghost"]


@pytest.mark.parametrize(
    "field, kind",
    [("identityRoles", "identities"), ("serviceRoles", "services"), ("postureCheckRoles", "postureChecks")],
)
def test_missing_id_reason_follows_the_field(field, kind):
    with pytest.raises(FieldError) as info:
        validate_roles(["@x"], field, lambda ids: ids)
    assert info.value.reason == f"no {kind} found with the given ids"


def test_kind_can_be_named_explicitly():
    with pytest.raises(FieldError) as info:
        validate_roles(["@x"], "roles", lambda ids: ids, kind="services")
    assert info.value.reason == "no services found with the given ids"


def test_without_a_callback_ids_are_not_checked():
    assert validate_roles(["@anything"], "identityRoles", None) == ["@anything"]


# -- validate_role_attributes -----------------------------------------------------------
def test_role_attributes_may_not_start_with_hash_or_at():
    assert validate_role_attributes(["a", "b-c"]) == ["a", "b-c"]
    for bad, prefix in (("#a", "#"), ("@a", "@")):
        with pytest.raises(FieldError) as info:
            validate_role_attributes(["ok", bad])
        assert info.value.field == "roleAttributes"
        assert info.value.reason == f"role attributes may not be prefixed with {prefix}"
        assert info.value.value == bad


def test_absent_role_attributes_are_empty():
    assert validate_role_attributes(None) == []


# -- matches -----------------------------------------------------------------------------
def test_all_of_needs_every_attribute():
    assert matches("AllOf", ["#a", "#b"], "x", ["a", "b", "c"])
    assert not matches("AllOf", ["#a", "#b"], "x", ["a"])


def test_any_of_needs_one_attribute():
    assert matches("AnyOf", ["#a", "#b"], "x", ["b"])
    assert not matches("AnyOf", ["#a", "#b"], "x", ["c"])


def test_id_entries_ignore_the_semantic():
    assert matches("AllOf", ["#a", "#b", "@x"], "x", [])
    assert not matches("AllOf", ["@y"], "x", ["a"])


def test_all_matches_everything():
    assert matches("AllOf", ["#all"], "x", [])
    assert matches("AnyOf", ["#all"], "x", ["q"])


def test_empty_list_matches_nothing():
    assert not matches("AnyOf", [], "x", ["a"])
    assert not matches("AllOf", [], "x", [])


def test_semantic_is_case_insensitive_and_unknown_matches_by_id_only():
    assert matches("anyof", ["#a", "#b"], "x", ["a"])
    assert matches("ALLOF", ["#a"], "x", ["a"])
    assert not matches("Bogus", ["#a"], "x", ["a"])
    assert matches("Bogus", ["@x"], "x", [])
    assert normalize_semantic("aNyOf") == "AnyOf" and normalize_semantic("x") is None


# -- roles_display -----------------------------------------------------------------------
def test_display_names_ids_and_repeats_attributes():
    names = {"i1": "alice"}
    assert roles_display(["#a", "@i1", "@gone", "#all"], names.get) == [
        {"role": "#a", "name": "#a"},
        {"role": "@i1", "name": "@alice"},
        {"role": "#all", "name": "#all"},
    ]
