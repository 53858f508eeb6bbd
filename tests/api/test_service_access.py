"""The client's services: visibility, permissions, configs, overrides, service updates, routers."""

from __future__ import annotations

from tests.support import assert_error

HOST = {"protocol": "tcp", "address": "127.0.0.1", "port": 8080}
INTERCEPT = {"protocols": ["tcp"], "addresses": ["app.ziti"], "portRanges": [{"low": 80, "high": 80}]}


def config(ziti_admin, unique, type_id, data):
    return ziti_admin.create("configs", {"name": unique("cfg"), "configTypeId": type_id, "data": data})


def grant(make_policy, identity_id, service_id, *types):
    for ptype in types:
        make_policy("service-policies", type=ptype, identityRoles=[f"@{identity_id}"], serviceRoles=[f"@{service_id}"])


def test_only_dialable_or_bindable_services_are_listed_with_permissions(make_client, make_service, make_policy):
    identity_id, client = make_client()
    both, dial_only, hidden = make_service(), make_service(), make_service()
    grant(make_policy, identity_id, both, "Dial", "Bind")
    grant(make_policy, identity_id, dial_only, "Dial")
    listed = client.edge("GET", "/services", params={"limit": 25}).json()
    assert [s["id"] for s in listed["data"]] == sorted([both, dial_only])
    assert listed["meta"]["pagination"]["totalCount"] == 2
    permissions = {s["id"]: s["permissions"] for s in listed["data"]}
    assert permissions == {both: ["Bind", "Dial"], dial_only: ["Dial"]}
    assert_error(client.edge("GET", f"/services/{hidden}"), 404, "NOT_FOUND")
    assert client.edge_ok("GET", f"/services/{both}")["permissions"] == ["Bind", "Dial"]
    assert_error(client.edge("GET", "/services/missing"), 404, "NOT_FOUND")


def test_admin_status_grants_nothing_on_the_client_api(ziti_admin, make_service):
    make_service()
    assert ziti_admin.edge_ok("GET", "/services") == []


def test_posture_queries_without_any_posture_check_are_dummies(make_client, make_service, make_policy):
    identity_id, client = make_client()
    service_id = make_service()
    grant(make_policy, identity_id, service_id, "Dial", "Bind")
    queries = client.edge_ok("GET", f"/services/{service_id}")["postureQueries"]
    assert sorted(q["policyId"] for q in queries) == [
        "dummy bind policy: no posture checks defined",
        "dummy dial policy: no posture checks defined",
    ]
    assert all(q["isPassing"] and q["postureQueries"] == [] for q in queries)


def test_config_by_requested_types_names_ids_and_all(ziti_admin, ziti_unique, make_client, make_service, make_policy):
    host, intercept = (
        config(ziti_admin, ziti_unique, "NH5p4FpGR", HOST),
        config(ziti_admin, ziti_unique, "g7cIWbcGg", INTERCEPT),
    )
    identity_id, client = make_client()
    service_id = make_service(configs=[host, intercept])
    grant(make_policy, identity_id, service_id, "Dial")
    get = lambda **p: client.edge_ok("GET", "/services", params=p)[0]  # noqa: E731
    assert get()["config"] == {} and get()["configs"] == [host, intercept]
    assert get(configTypes="intercept.v1")["config"] == {"intercept.v1": INTERCEPT}
    assert get(configTypes=["NH5p4FpGR", "unknown"])["config"] == {"host.v1": HOST}
    assert get(configTypes="all")["config"] == {"host.v1": HOST, "intercept.v1": INTERCEPT}


def test_config_types_fall_back_to_the_login_list(ziti_admin, ziti_unique, make_client, make_service, make_policy):
    intercept = config(ziti_admin, ziti_unique, "g7cIWbcGg", INTERCEPT)
    identity_id, client = make_client(config_types=["intercept.v1"])
    service_id = make_service(configs=[intercept, config(ziti_admin, ziti_unique, "NH5p4FpGR", HOST)])
    grant(make_policy, identity_id, service_id, "Bind")
    assert client.edge_ok("GET", "/services")[0]["config"] == {"intercept.v1": INTERCEPT}
    detail = client.edge_ok("GET", f"/services/{service_id}", params={"configTypes": "host.v1"})
    assert detail["config"] == {"intercept.v1": INTERCEPT}


def test_identity_overrides_win_and_are_listed(ziti_admin, ziti_unique, make_client, make_service, make_policy):
    base, override = (
        config(ziti_admin, ziti_unique, "g7cIWbcGg", INTERCEPT),
        config(ziti_admin, ziti_unique, "g7cIWbcGg", {**INTERCEPT, "addresses": ["x.ziti"]}),
    )
    identity_id, client = make_client(config_types=["all"])
    service_id = make_service(configs=[base])
    grant(make_policy, identity_id, service_id, "Dial")
    ziti_admin.mgmt_ok(
        "POST", f"/identities/{identity_id}/service-configs", json=[{"serviceId": service_id, "configId": override}]
    )
    assert client.edge_ok("GET", "/services")[0]["config"]["intercept.v1"]["addresses"] == ["x.ziti"]
    listed = ziti_admin.mgmt("GET", f"/identities/{identity_id}/service-configs").json()
    assert [(e["serviceId"], e["configId"], e["service"]["id"], e["config"]["id"]) for e in listed["data"]] == [
        (service_id, override, service_id, override)
    ]
    assert listed["meta"]["pagination"] == {"limit": 1, "offset": 0, "totalCount": 1}
    ziti_admin.mgmt_ok(
        "DELETE", f"/identities/{identity_id}/service-configs", json=[{"serviceId": service_id, "configId": base}]
    )
    assert ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}/service-configs") == []
    assert client.edge_ok("GET", "/services")[0]["config"]["intercept.v1"] == INTERCEPT


def test_override_of_the_same_type_replaces_and_router_types_are_refused(
    ziti_admin, ziti_unique, make_identity, make_service
):
    identity_id, service_id = make_identity(), make_service()
    first, second = (
        config(ziti_admin, ziti_unique, "NH5p4FpGR", HOST),
        config(ziti_admin, ziti_unique, "NH5p4FpGR", {**HOST, "port": 9}),
    )
    for config_id in (first, second):
        ziti_admin.mgmt_ok(
            "POST",
            f"/identities/{identity_id}/service-configs",
            json=[{"serviceId": service_id, "configId": config_id}],
        )
    assert [e["configId"] for e in ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}/service-configs")] == [second]
    router_config = config(ziti_admin, ziti_unique, "router.link.v1", {})
    response = ziti_admin.mgmt(
        "POST",
        f"/identities/{identity_id}/service-configs",
        json=[{"serviceId": service_id, "configId": router_config}],
    )
    assert_error(response, 400, "COULD_NOT_VALIDATE")
    response = ziti_admin.mgmt(
        "POST", f"/identities/{identity_id}/service-configs", json=[{"serviceId": "nope", "configId": first}]
    )
    assert_error(response, 404, "NOT_FOUND")
    assert_error(
        ziti_admin.mgmt("POST", f"/identities/{identity_id}/service-configs", json={}), 400, "COULD_NOT_VALIDATE"
    )


def test_service_updates_move_with_policy_service_and_config_changes(
    ziti_admin, ziti_unique, ziti_clock, make_client, make_service, make_policy
):
    intercept = config(ziti_admin, ziti_unique, "g7cIWbcGg", INTERCEPT)
    identity_id, client = make_client(attrs=["watcher"])
    service_id = make_service(configs=[intercept])
    marks = [client.edge_ok("GET", "/current-api-session/service-updates")["lastChangeAt"]]

    def step(method, path, **kwargs):
        ziti_clock.advance(seconds=5)
        ziti_admin.mgmt_ok(method, path, **kwargs)
        marks.append(client.edge_ok("GET", "/current-api-session/service-updates")["lastChangeAt"])

    policy_id = make_policy("service-policies", type="Dial", identityRoles=["#other"], serviceRoles=[f"@{service_id}"])
    step("PATCH", f"/service-policies/{policy_id}", json={"identityRoles": ["#watcher"]})
    step("PATCH", f"/services/{service_id}", json={"maxIdleTimeMillis": 10})
    step("PATCH", f"/configs/{intercept}", json={"data": {**INTERCEPT, "addresses": ["y.ziti"]}})
    step("POST", f"/identities/{identity_id}/service-configs", json=[{"serviceId": service_id, "configId": intercept}])
    step("PATCH", f"/identities/{identity_id}", json={"roleAttributes": []})
    assert marks == sorted(set(marks)) and len(marks) == 6


def test_service_edge_routers_and_the_session_token_rule(
    ziti_admin, make_client, make_service, make_edge_router, make_policy
):
    identity_id, client = make_client(attrs=["c"])
    service_id = make_service(attrs=["s"])
    shared, only_mine = make_edge_router(attrs=["shared"]), make_edge_router(attrs=["mine"])
    grant(make_policy, identity_id, service_id, "Dial")
    make_policy("edge-router-policies", identityRoles=["#c"], edgeRouterRoles=["#shared", "#mine"])
    make_policy("service-edge-router-policies", serviceRoles=["#s"], edgeRouterRoles=["#shared"])
    data = client.edge_ok("GET", f"/services/{service_id}/edge-routers")
    assert [r["id"] for r in data["edgeRouters"]] == [shared] and only_mine
    session = client.edge_ok("POST", "/sessions", json={"serviceId": service_id})
    assert (
        client.edge(
            "GET", f"/services/{service_id}/edge-routers", headers={"session-token": session["token"]}
        ).status_code
        == 200
    )
    bad = client.edge("GET", f"/services/{service_id}/edge-routers", headers={"session-token": "forged"})
    assert_error(bad, 401, "UNAUTHORIZED")
    _, other = make_client()
    assert_error(other.edge("GET", f"/services/{service_id}/edge-routers"), 404, "NOT_FOUND")


def test_client_service_terminators(ziti_admin, make_client, make_service, make_edge_router, make_policy):
    identity_id, client = make_client()
    service_id, router_id = make_service(), make_edge_router()
    terminator_id = ziti_admin.create(
        "terminators", {"service": service_id, "router": router_id, "address": "a", "binding": "b"}
    )
    assert_error(client.edge("GET", f"/services/{service_id}/terminators"), 404, "NOT_FOUND")
    grant(make_policy, identity_id, service_id, "Bind")
    assert [t["id"] for t in client.edge_ok("GET", f"/services/{service_id}/terminators")] == [terminator_id]


def test_identity_services_and_policy_advice(ziti_admin, make_identity, make_service, make_edge_router, make_policy):
    identity_id = make_identity(roleAttributes=["adv"])
    service_id = make_service(attrs=["adv-svc"])
    first, second = make_edge_router(attrs=["adv-er"]), make_edge_router(attrs=["adv-er"])
    make_policy("service-policies", type="Bind", identityRoles=["#adv"], serviceRoles=["#adv-svc"])
    make_policy("edge-router-policies", identityRoles=["#adv"], edgeRouterRoles=[f"@{first}"])
    make_policy("service-edge-router-policies", serviceRoles=["#adv-svc"], edgeRouterRoles=["#adv-er"])
    listed = ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}/services", params={"policyType": "bind"})
    assert [(s["id"], s["permissions"]) for s in listed] == [(service_id, ["Bind"])]
    assert ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}/services", params={"policyType": "dial"}) == []
    advice = ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}/policy-advice/{service_id}")
    assert advice["isBindAllowed"] is True and advice["isDialAllowed"] is False
    assert advice["identityRouterCount"] == 1 and advice["serviceRouterCount"] == 2
    assert [(r["id"], r["isOnline"]) for r in advice["commonRouters"]] == [(first, False)] and second
    assert advice["identity"]["id"] == identity_id and advice["service"]["name"]
    assert ziti_admin.mgmt("GET", f"/identities/{identity_id}/policy-advice/missing").status_code == 404


def test_paging_and_filtering_apply_to_the_visible_subset(make_client, make_service, make_policy, ziti_unique):
    identity_id, client = make_client(attrs=["pager"])
    prefix = ziti_unique("page")
    ids = sorted(make_service(f"{prefix}-{n}", attrs=["paged"]) for n in range(3))
    make_service(f"{prefix}-hidden")
    make_policy("service-policies", type="Dial", identityRoles=["#pager"], serviceRoles=["#paged"])
    body = client.edge("GET", "/services", params={"limit": 1, "offset": 1}).json()
    assert [s["id"] for s in body["data"]] == [ids[1]]
    assert body["meta"]["pagination"] == {"limit": 1, "offset": 1, "totalCount": 3}
    assert_error(client.edge("GET", "/services", params={"limit": "many"}), 400, "INVALID_PAGINATION")
    found = client.edge_ok("GET", "/services", params={"filter": f'name = "{prefix}-2" or name = "{prefix}-hidden"'})
    assert [s["name"] for s in found] == [f"{prefix}-2"]
    assert [s["id"] for s in client.edge_ok("GET", "/services", params={"roleFilter": "#paged", "limit": -1})] == ids
