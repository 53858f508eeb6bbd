"""Policies: role validation exactly as the real controller, display fields, what they match."""

from __future__ import annotations

import pytest

from tests.support import assert_error

KINDS = [
    ("service-policies", {"type": "Dial"}, "identityRoles"),
    ("edge-router-policies", {}, "identityRoles"),
    ("service-edge-router-policies", {}, "serviceRoles"),
]


@pytest.mark.parametrize("collection, extra, field", KINDS)
def test_role_list_rules(ziti_admin, ziti_unique, collection, extra, field):
    body = {"name": ziti_unique(), "semantic": "AllOf", **extra}
    error = assert_error(
        ziti_admin.mgmt("POST", f"/{collection}", json={**body, field: ["#all", "#x"]}),
        400,
        "COULD_NOT_VALIDATE",
        field,
    )
    assert "#all" in error["cause"]["reason"]
    assert_error(
        ziti_admin.mgmt("POST", f"/{collection}", json={**body, field: ["plain"]}), 400, "COULD_NOT_VALIDATE", field
    )
    error = assert_error(
        ziti_admin.mgmt("POST", f"/{collection}", json={**body, field: ["@missing"]}), 400, "COULD_NOT_VALIDATE", field
    )
    assert error["cause"]["value"] == '["missing"]' and "found with the given ids" in error["cause"]["reason"]
    assert_error(
        ziti_admin.mgmt("POST", f"/{collection}", json={"name": ziti_unique(), **extra}),
        400,
        "COULD_NOT_VALIDATE",
        "semantic",
    )


def test_unknown_edge_router_id_names_routers(ziti_admin, ziti_unique):
    response = ziti_admin.mgmt(
        "POST", "/edge-router-policies", json={"name": ziti_unique(), "semantic": "AnyOf", "edgeRouterRoles": ["@nope"]}
    )
    assert "no routers found" in assert_error(response, 400, "COULD_NOT_VALIDATE", "edgeRouterRoles")["cause"]["reason"]


def test_a_transit_router_is_no_edge_router_role(ziti_admin, ziti_unique):
    transit_id = ziti_admin.create("transit-routers", {"name": ziti_unique()})
    response = ziti_admin.mgmt(
        "POST",
        "/edge-router-policies",
        json={"name": ziti_unique(), "semantic": "AnyOf", "edgeRouterRoles": [f"@{transit_id}"]},
    )
    assert_error(response, 400, "COULD_NOT_VALIDATE", "edgeRouterRoles")


def test_roles_are_sorted_and_displayed_with_names(ziti_admin, make_identity, make_service, make_policy, ziti_unique):
    name = ziti_unique("named")
    identity_id = make_identity(name)
    service_id = make_service()
    policy_id = make_policy(
        "service-policies",
        type="Bind",
        semantic="anyof",
        identityRoles=["#zeta", f"@{identity_id}", "#alpha", "#alpha"],
        serviceRoles=[f"@{service_id}"],
    )
    data = ziti_admin.mgmt_ok("GET", f"/service-policies/{policy_id}")
    assert data["identityRoles"] == sorted(["#zeta", f"@{identity_id}", "#alpha"]) and data["semantic"] == "AnyOf"
    assert {"role": f"@{identity_id}", "name": f"@{name}"} in data["identityRolesDisplay"]
    assert {"role": "#alpha", "name": "#alpha"} in data["identityRolesDisplay"]
    assert data["postureCheckRoles"] == [] and data["postureCheckRolesDisplay"] == [] and data["type"] == "Bind"


def test_service_policy_type_is_required_and_checked(ziti_admin, ziti_unique):
    assert_error(
        ziti_admin.mgmt("POST", "/service-policies", json={"name": ziti_unique(), "semantic": "AllOf"}),
        400,
        "COULD_NOT_VALIDATE",
        "type",
    )
    response = ziti_admin.mgmt(
        "POST", "/service-policies", json={"name": ziti_unique(), "semantic": "AllOf", "type": "Invalid"}
    )
    assert_error(response, 400, "COULD_NOT_VALIDATE", "type")


def test_semantics_all_of_any_of_and_empty_lists(ziti_admin, make_identity, make_service, make_policy):
    both, one = make_identity(roleAttributes=["a", "b"]), make_identity(roleAttributes=["a"])
    service_id = make_service()
    all_of = make_policy(
        "service-policies", type="Dial", semantic="AllOf", identityRoles=["#a", "#b"], serviceRoles=[f"@{service_id}"]
    )
    any_of = make_policy(
        "service-policies", type="Dial", semantic="AnyOf", identityRoles=["#a", "#b"], serviceRoles=[f"@{service_id}"]
    )
    empty = make_policy("service-policies", type="Dial", identityRoles=[], serviceRoles=["#all"])

    def members(pid):
        return {i["id"] for i in ziti_admin.mgmt_ok("GET", f"/service-policies/{pid}/identities", params={"limit": -1})}

    assert both in members(all_of) and one not in members(all_of)
    assert {both, one} <= members(any_of)
    assert members(empty) == set()


def test_id_roles_ignore_the_semantic_and_all_matches_everyone(
    ziti_admin, make_identity, make_edge_router, make_policy
):
    named = make_identity(roleAttributes=["x"])
    router_id = make_edge_router()
    policy_id = make_policy(
        "edge-router-policies",
        semantic="AllOf",
        identityRoles=[f"@{named}", "#nobody-has-this"],
        edgeRouterRoles=["#all"],
    )
    assert [i["id"] for i in ziti_admin.mgmt_ok("GET", f"/edge-router-policies/{policy_id}/identities")] == [named]
    assert router_id in {
        r["id"]
        for r in ziti_admin.mgmt_ok("GET", f"/edge-router-policies/{policy_id}/edge-routers", params={"limit": -1})
    }
    assert [p["id"] for p in ziti_admin.mgmt_ok("GET", f"/identities/{named}/edge-router-policies")] == [policy_id]
    assert policy_id in {
        p["id"]
        for p in ziti_admin.mgmt_ok("GET", f"/edge-routers/{router_id}/edge-router-policies", params={"limit": -1})
    }


def test_policy_listings_of_services_and_posture_checks(
    ziti_admin, make_service, make_edge_router, make_policy, ziti_unique
):
    service_id = make_service(attrs=["api"])
    check_id = ziti_admin.create(
        "posture-checks", {"name": ziti_unique(), "typeId": "DOMAIN", "domains": ["corp"], "roleAttributes": ["corp"]}
    )
    sp = make_policy(
        "service-policies", type="Dial", identityRoles=[], serviceRoles=["#api"], postureCheckRoles=["#corp"]
    )
    assert [s["id"] for s in ziti_admin.mgmt_ok("GET", f"/service-policies/{sp}/services")] == [service_id]
    assert [c["id"] for c in ziti_admin.mgmt_ok("GET", f"/service-policies/{sp}/posture-checks")] == [check_id]
    router_id = make_edge_router(attrs=["r"])
    serp = make_policy("service-edge-router-policies", serviceRoles=["#api"], edgeRouterRoles=["#r"])
    assert [s["id"] for s in ziti_admin.mgmt_ok("GET", f"/service-edge-router-policies/{serp}/services")] == [
        service_id
    ]
    assert [r["id"] for r in ziti_admin.mgmt_ok("GET", f"/service-edge-router-policies/{serp}/edge-routers")] == [
        router_id
    ]
    assert [p["id"] for p in ziti_admin.mgmt_ok("GET", f"/edge-routers/{router_id}/service-edge-router-policies")] == [
        serp
    ]
    assert ziti_admin.mgmt("GET", "/service-policies/missing/services").status_code == 404


def test_put_replaces_roles_and_patch_keeps_the_rest(ziti_admin, make_policy):
    policy_id = make_policy(
        "service-edge-router-policies", serviceRoles=["#a"], edgeRouterRoles=["#b"], tags={"k": "v"}
    )
    ziti_admin.mgmt_ok(
        "PATCH", f"/service-edge-router-policies/{policy_id}", json={"serviceRoles": ["#c"], "edgeRouterRoles": None}
    )
    data = ziti_admin.mgmt_ok("GET", f"/service-edge-router-policies/{policy_id}")
    assert data["serviceRoles"] == ["#c"] and data["edgeRouterRoles"] == ["#b"] and data["tags"] == {"k": "v"}
    ziti_admin.mgmt_ok(
        "PUT", f"/service-edge-router-policies/{policy_id}", json={"name": data["name"], "semantic": "AllOf"}
    )
    data = ziti_admin.mgmt_ok("GET", f"/service-edge-router-policies/{policy_id}")
    assert (
        data["serviceRoles"] == []
        and data["edgeRouterRoles"] == []
        and data["semantic"] == "AllOf"
        and data["tags"] == {}
    )


def test_filters_on_policy_fields(ziti_admin, make_policy, make_identity, ziti_unique):
    prefix = ziti_unique("pf")
    identity_id = make_identity()
    dial = make_policy("service-policies", name=prefix + "-d", type="Dial", identityRoles=[f"@{identity_id}"])
    bind = make_policy("service-policies", name=prefix + "-b", type="Bind", identityRoles=["#all"])
    by_type = ziti_admin.mgmt_ok(
        "GET", "/service-policies", params={"filter": f'name contains "{prefix}" and type = "Dial"'}
    )
    assert [p["id"] for p in by_type] == [dial]
    by_member = ziti_admin.mgmt_ok(
        "GET",
        "/service-policies",
        params={"filter": f'name contains "{prefix}" and anyOf(identities) = "{identity_id}"'},
    )
    assert {p["id"] for p in by_member} == {dial, bind}
    by_role = ziti_admin.mgmt_ok(
        "GET", "/service-policies", params={"filter": f'name contains "{prefix}" and anyOf(identityRoles) = "#all"'}
    )
    assert len(by_role) == 1 and by_role[0]["type"] == "Bind"


def test_identity_role_attributes_listing(ziti_admin, make_identity, ziti_unique):
    attr = ziti_unique("ira")
    make_identity(roleAttributes=[attr])
    assert ziti_admin.mgmt_ok("GET", "/identity-role-attributes", params={"filter": f'id contains "{attr}"'}) == [attr]
