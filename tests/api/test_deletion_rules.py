"""Deletion rules: the real 409s, the cascades, and no dangling reference left anywhere."""

from __future__ import annotations

from tests.support import assert_error

ROLE_LISTS = {
    "service-policies": {
        "identityRoles": "identities",
        "serviceRoles": "services",
        "postureCheckRoles": "posture-checks",
    },
    "edge-router-policies": {"identityRoles": "identities", "edgeRouterRoles": "edge-routers"},
    "service-edge-router-policies": {"serviceRoles": "services", "edgeRouterRoles": "edge-routers"},
}


def all_of(ziti_admin, collection):
    return ziti_admin.mgmt_ok("GET", f"/{collection}", params={"limit": -1})


def dangling(ziti_admin) -> list[str]:
    """Every reference the API shows that points at nothing (empty when the network is consistent)."""
    ids = {
        c: {e["id"] for e in all_of(ziti_admin, c)}
        for c in ("identities", "services", "edge-routers", "posture-checks", "configs", "routers", "api-sessions")
    }
    problems = []
    for collection, lists in ROLE_LISTS.items():
        for policy in all_of(ziti_admin, collection):
            for field, target in lists.items():
                problems += [
                    f"{collection}/{policy['id']}.{field}: {r}"
                    for r in policy[field]
                    if r.startswith("@") and r[1:] not in ids[target]
                ]
    for service in all_of(ziti_admin, "services"):
        problems += [f"services/{service['id']}.configs: {c}" for c in service["configs"] if c not in ids["configs"]]
    for terminator in all_of(ziti_admin, "terminators"):
        if terminator["serviceId"] not in ids["services"] or terminator["routerId"] not in ids["routers"]:
            problems.append(f"terminators/{terminator['id']}")
    for session in all_of(ziti_admin, "sessions"):
        if session["serviceId"] not in ids["services"] or session["apiSessionId"] not in ids["api-sessions"]:
            problems.append(f"sessions/{session['id']}")
    for identity_id in ids["identities"]:
        for override in ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}/service-configs"):
            if override["serviceId"] not in ids["services"] or override["configId"] not in ids["configs"]:
                problems.append(f"identities/{identity_id}/service-configs")
    return problems


def test_deleting_referenced_entities_edits_policies_instead_of_failing(
    ziti_admin, ziti_unique, make_identity, make_service, make_edge_router, make_policy
):
    identity_id, service_id, router_id = make_identity(), make_service(), make_edge_router()
    check_id = ziti_admin.create("posture-checks", {"name": ziti_unique(), "typeId": "MAC", "macAddresses": ["aa"]})
    sp = make_policy(
        "service-policies",
        type="Dial",
        identityRoles=[f"@{identity_id}", "#keep"],
        serviceRoles=[f"@{service_id}"],
        postureCheckRoles=[f"@{check_id}"],
    )
    erp = make_policy("edge-router-policies", identityRoles=[f"@{identity_id}"], edgeRouterRoles=[f"@{router_id}"])
    serp = make_policy(
        "service-edge-router-policies", serviceRoles=[f"@{service_id}"], edgeRouterRoles=[f"@{router_id}"]
    )
    for path in (
        f"/identities/{identity_id}",
        f"/services/{service_id}",
        f"/edge-routers/{router_id}",
        f"/posture-checks/{check_id}",
    ):
        ziti_admin.mgmt_ok("DELETE", path)
    policy = ziti_admin.mgmt_ok("GET", f"/service-policies/{sp}")
    assert policy["identityRoles"] == ["#keep"] and policy["serviceRoles"] == [] and policy["postureCheckRoles"] == []
    assert ziti_admin.mgmt_ok("GET", f"/edge-router-policies/{erp}")["identityRoles"] == []
    assert ziti_admin.mgmt_ok("GET", f"/service-edge-router-policies/{serp}")["edgeRouterRoles"] == []
    assert dangling(ziti_admin) == []


def test_identity_delete_removes_overrides_and_sessions(
    ziti_admin, ziti_unique, make_client, make_service, make_edge_router, make_policy
):
    identity_id, client = make_client()
    service_id, router_id = make_service(), make_edge_router()
    config_id = ziti_admin.create(
        "configs", {"name": ziti_unique(), "configTypeId": "proxy.v1", "data": {"port": 1, "protocols": ["tcp"]}}
    )
    ziti_admin.mgmt_ok(
        "POST", f"/identities/{identity_id}/service-configs", json=[{"serviceId": service_id, "configId": config_id}]
    )
    make_policy("service-policies", type="Dial", identityRoles=[f"@{identity_id}"], serviceRoles=[f"@{service_id}"])
    make_policy("edge-router-policies", identityRoles=["#all"], edgeRouterRoles=[f"@{router_id}"])
    make_policy("service-edge-router-policies", serviceRoles=["#all"], edgeRouterRoles=["#all"])
    session = client.edge_ok("POST", "/sessions", json={"serviceId": service_id})
    ziti_admin.mgmt_ok("DELETE", f"/identities/{identity_id}")
    assert ziti_admin.mgmt("GET", f"/sessions/{session['id']}").status_code == 404
    ziti_admin.mgmt_ok("DELETE", f"/configs/{config_id}")
    assert dangling(ziti_admin) == []


def test_a_config_used_by_an_override_cannot_be_deleted(ziti_admin, ziti_unique, make_identity, make_service):
    identity_id, service_id = make_identity(), make_service()
    config_id = ziti_admin.create(
        "configs", {"name": ziti_unique(), "configTypeId": "proxy.v1", "data": {"port": 1, "protocols": ["tcp"]}}
    )
    ziti_admin.mgmt_ok(
        "POST", f"/identities/{identity_id}/service-configs", json=[{"serviceId": service_id, "configId": config_id}]
    )
    assert_error(ziti_admin.mgmt("DELETE", f"/configs/{config_id}"), 409, "CAN_NOT_DELETE_REFERENCED_ENTITY")
    ziti_admin.mgmt_ok("DELETE", f"/services/{service_id}")
    assert ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}/service-configs") == []
    ziti_admin.mgmt_ok("DELETE", f"/configs/{config_id}")


def test_policies_and_routers_are_always_deletable(ziti_admin, make_edge_router, make_policy, ziti_unique):
    router_id = make_edge_router()
    policy_id = make_policy("edge-router-policies", identityRoles=["#all"], edgeRouterRoles=[f"@{router_id}"])
    ziti_admin.create(
        "terminators",
        {
            "service": ziti_admin.create("services", {"name": ziti_unique(), "encryptionRequired": False}),
            "router": router_id,
            "address": "a",
            "binding": "b",
        },
    )
    ziti_admin.mgmt_ok("DELETE", f"/routers/{router_id}")
    ziti_admin.mgmt_ok("DELETE", f"/edge-router-policies/{policy_id}")
    transit_id = ziti_admin.create("transit-routers", {"name": ziti_unique()})
    ziti_admin.mgmt_ok("DELETE", f"/transit-routers/{transit_id}")
    assert dangling(ziti_admin) == []


def test_unknown_ids_are_404_on_every_delete(ziti_admin):
    for collection in (
        "services",
        "configs",
        "config-types",
        "edge-routers",
        "routers",
        "transit-routers",
        "terminators",
        "service-policies",
        "edge-router-policies",
        "service-edge-router-policies",
        "posture-checks",
        "sessions",
    ):
        assert_error(ziti_admin.mgmt("DELETE", f"/{collection}/missing"), 404, "NOT_FOUND")
