"""Identities: every field, create/replace/patch/delete, roleFilter, cascades."""

from __future__ import annotations

import pytest

from tests.support import assert_error


def test_create_and_read_back_every_field(ziti_admin, ziti_unique, ziti):
    name = ziti_unique("full")
    identity_id = ziti_admin.create(
        "identities",
        {
            "name": name,
            "type": "Device",
            "isAdmin": False,
            "roleAttributes": ["sales", "eu"],
            "externalId": "ext-1",
            "appData": {"nested": {"deep": [1, 2]}},
            "defaultHostingCost": 10,
            "defaultHostingPrecedence": "required",
            "serviceHostingCosts": {"svc1": 5},
            "serviceHostingPrecedences": {"svc1": "failed"},
            "tags": {"env": "prod"},
        },
    )
    data = ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")
    assert data["name"] == name and data["typeId"] == "Default" and data["type"]["name"] == "Default"
    assert data["roleAttributes"] == ["sales", "eu"] and data["externalId"] == "ext-1"
    assert data["appData"] == {"nested": {"deep": [1, 2]}}
    assert data["defaultHostingCost"] == 10 and data["defaultHostingPrecedence"] == "required"
    assert data["serviceHostingCosts"] == {"svc1": 5} and data["serviceHostingPrecedences"] == {"svc1": "failed"}
    assert data["tags"] == {"env": "prod"} and data["authPolicyId"] == "default"
    assert data["authPolicy"]["id"] == "default" and data["isMfaEnabled"] is False
    assert data["disabled"] is False and data["hasApiSession"] is False
    assert data["authenticators"] == {} and data["enrollment"] == {}
    assert data["edgeRouterConnectionStatus"] == "offline"


@pytest.mark.parametrize("wire_type", ["User", "Device", "Service", "Default"])
def test_types_are_stored_as_default(ziti_admin, ziti_unique, wire_type):
    identity_id = ziti_admin.create("identities", {"name": ziti_unique(), "type": wire_type, "isAdmin": False})
    assert ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")["typeId"] == "Default"


def test_router_type_is_refused(ziti_admin, ziti_unique):
    response = ziti_admin.mgmt("POST", "/identities", json={"name": ziti_unique(), "type": "Router", "isAdmin": False})
    assert_error(response, 400, "COULD_NOT_VALIDATE", "typeId")


def test_unknown_auth_policy_is_404(ziti_admin, ziti_unique):
    response = ziti_admin.mgmt(
        "POST", "/identities", json={"name": ziti_unique(), "type": "User", "isAdmin": False, "authPolicyId": "nope"}
    )
    assert_error(response, 404, "NOT_FOUND")


def test_role_attributes_must_not_start_with_hash_or_at(ziti_admin, ziti_unique):
    response = ziti_admin.mgmt(
        "POST",
        "/identities",
        json={"name": ziti_unique(), "type": "User", "isAdmin": False, "roleAttributes": ["#bad"]},
    )
    assert_error(response, 400, "COULD_NOT_VALIDATE")


def test_put_clears_omitted_optional_fields(ziti_admin, make_identity, ziti_unique):
    identity_id = make_identity(roleAttributes=["a"], tags={"k": "v"}, appData={"x": 1}, externalId="e")
    name = ziti_unique("put")
    ziti_admin.mgmt_ok("PUT", f"/identities/{identity_id}", json={"name": name, "type": "User", "isAdmin": True})
    data = ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")
    assert data["name"] == name and data["isAdmin"] is True
    assert data["roleAttributes"] == [] and data["tags"] == {} and data["appData"] == {} and data["externalId"] is None


def test_put_requires_name_type_and_is_admin(ziti_admin, make_identity):
    response = ziti_admin.mgmt("PUT", f"/identities/{make_identity()}", json={"name": "x", "type": "User"})
    assert_error(response, 400, "COULD_NOT_VALIDATE", "isAdmin")


def test_patch_changes_only_present_non_null_keys(ziti_admin, make_identity):
    identity_id = make_identity(roleAttributes=["a"], tags={"k": "v"}, externalId="keep")
    before = ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")
    ziti_admin.mgmt_ok(
        "PATCH", f"/identities/{identity_id}", json={"roleAttributes": ["b", "c"], "externalId": None, "name": None}
    )
    data = ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")
    assert data["roleAttributes"] == ["b", "c"] and data["externalId"] == "keep" and data["name"] == before["name"]
    assert data["tags"] == {"k": "v"}


def test_patch_replaces_maps_whole_and_clears_with_empty(ziti_admin, make_identity):
    identity_id = make_identity(tags={"a": "1", "b": "2"}, roleAttributes=["x"])
    ziti_admin.mgmt_ok("PATCH", f"/identities/{identity_id}", json={"tags": {"c": True}, "roleAttributes": []})
    data = ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")
    assert data["tags"] == {"c": True} and data["roleAttributes"] == []


def test_update_moves_updated_at_with_the_clock(ziti_admin, make_identity, ziti_clock):
    identity_id = make_identity()
    before = ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")
    ziti_clock.advance(seconds=3)
    ziti_admin.mgmt_ok("PATCH", f"/identities/{identity_id}", json={"roleAttributes": ["z"]})
    after = ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")
    assert after["updatedAt"] > before["updatedAt"] and after["createdAt"] == before["createdAt"]


def test_rename_to_an_existing_name_is_refused(ziti_admin, make_identity, ziti_unique):
    taken = ziti_unique("taken")
    make_identity(taken)
    other = make_identity()
    response = ziti_admin.mgmt("PATCH", f"/identities/{other}", json={"name": taken})
    assert_error(response, 400, "COULD_NOT_VALIDATE", "name")


def test_role_filter_all_of_and_any_of(ziti_admin, make_identity, ziti_unique):
    prefix = ziti_unique("rf")
    both = make_identity(f"{prefix}-both", roleAttributes=["red", "blue"])
    red = make_identity(f"{prefix}-red", roleAttributes=["red"])
    plain = make_identity(f"{prefix}-plain")
    flt = f'name contains "{prefix}"'
    all_of = {
        i["id"]
        for i in ziti_admin.mgmt_ok("GET", "/identities", params={"filter": flt, "roleFilter": ["#red", "#blue"]})
    }
    any_of = {
        i["id"]
        for i in ziti_admin.mgmt_ok(
            "GET", "/identities", params={"filter": flt, "roleFilter": ["#red", "#blue"], "roleSemantic": "AnyOf"}
        )
    }
    by_id = {
        i["id"] for i in ziti_admin.mgmt_ok("GET", "/identities", params={"filter": flt, "roleFilter": [f"@{plain}"]})
    }
    assert all_of == {both} and any_of == {both, red} and by_id == {plain}


def test_filter_on_role_attributes(ziti_admin, make_identity, ziti_unique):
    prefix = ziti_unique("fa")
    target = make_identity(f"{prefix}-a", roleAttributes=["sales", "ops"])
    make_identity(f"{prefix}-b", roleAttributes=["ops"])
    found = ziti_admin.mgmt_ok(
        "GET", "/identities", params={"filter": f'name contains "{prefix}" and anyOf(roleAttributes) = "sales"'}
    )
    assert [i["id"] for i in found] == [target]


def test_delete_cascades_authenticators_enrollments_and_sessions(ziti, ziti_admin, make_identity):
    identity_id = make_identity(password="pass-word", username="cascade-me")
    session = ziti.signed_in("cascade-me", "pass-word")
    ziti_admin.create("enrollments", {"method": "ott", "identityId": identity_id, "expiresAt": "2030-01-01T00:00:00Z"})
    ziti_admin.mgmt_ok("DELETE", f"/identities/{identity_id}")
    assert session.mgmt("GET", "/current-identity").status_code == 401
    assert ziti_admin.mgmt_ok("GET", "/authenticators", params={"filter": f'identityId = "{identity_id}"'}) == []
    assert ziti_admin.mgmt_ok("GET", "/enrollments", params={"filter": f'identityId = "{identity_id}"'}) == []
    assert ziti_admin.mgmt("GET", f"/identities/{identity_id}").status_code == 404


def test_default_admin_cannot_be_deleted(ziti_admin):
    me = ziti_admin.mgmt_ok("GET", "/current-identity")["id"]
    assert_error(ziti_admin.mgmt("DELETE", f"/identities/{me}"), 400, "ENTITY_CAN_NOT_BE_DELETED")


def test_create_with_enrollment_request(ziti_admin, ziti_unique):
    identity_id = ziti_admin.create(
        "identities",
        {
            "name": ziti_unique(),
            "type": "User",
            "isAdmin": False,
            "enrollment": {"ott": True, "updb": ziti_unique("user")},
        },
    )
    enrollment = ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")["enrollment"]
    assert set(enrollment) == {"ott", "updb"}
    assert enrollment["ott"]["jwt"].count(".") == 2 and enrollment["ott"]["token"]
    listed = ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}/enrollments")
    assert {e["method"] for e in listed} == {"ott", "updb"}


def test_identity_authenticators_listing(ziti_admin, make_identity):
    identity_id = make_identity(password="pass-word", username="listed-auth")
    listed = ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}/authenticators")
    assert [a["username"] for a in listed] == ["listed-auth"]
    assert ziti_admin.mgmt("GET", "/identities/missing/authenticators").status_code == 404


def test_identity_types_are_default_and_router(ziti_admin):
    assert {t["id"] for t in ziti_admin.mgmt_ok("GET", "/identity-types")} == {"Default", "Router"}
    assert ziti_admin.mgmt_ok("GET", "/identity-types/Router")["name"] == "Router"
