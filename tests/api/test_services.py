"""Services (management): fields, config rules, roleFilter, related listings, terminators."""

from __future__ import annotations

from tests.support import assert_error

PROXY = {"port": 8080, "protocols": ["tcp"]}


def proxy_config(ziti_admin, unique, config_type="proxy.v1", data=PROXY):
    return ziti_admin.create("configs", {"name": unique("cfg"), "configTypeId": config_type, "data": data})


def test_create_and_read_every_field(ziti_admin, ziti_unique, make_service):
    config_id = proxy_config(ziti_admin, ziti_unique)
    name = ziti_unique("svc")
    service_id = make_service(
        name,
        attrs=["web"],
        configs=[config_id],
        maxIdleTimeMillis=5000,
        terminatorStrategy="weighted",
        tags={"env": "prod"},
    )
    data = ziti_admin.mgmt_ok("GET", f"/services/{service_id}")
    assert data["name"] == name and data["roleAttributes"] == ["web"] and data["configs"] == [config_id]
    assert data["encryptionRequired"] is True and data["maxIdleTimeMillis"] == 5000
    assert data["terminatorStrategy"] == "weighted" and data["tags"] == {"env": "prod"}
    assert data["permissions"] == ["Invalid"] and isinstance(data["postureQueries"], list)
    assert data["_links"]["service-policies"]["href"] == f"./services/{service_id}/service-policies"


def test_defaults_and_encryption_required_is_fixed_at_create(ziti_admin, ziti_unique):
    service_id = ziti_admin.create("services", {"name": ziti_unique(), "encryptionRequired": False})
    data = ziti_admin.mgmt_ok("GET", f"/services/{service_id}")
    assert data["terminatorStrategy"] == "smartrouting" and data["maxIdleTimeMillis"] == 0 and data["configs"] == []
    ziti_admin.mgmt_ok("PATCH", f"/services/{service_id}", json={"encryptionRequired": True})
    ziti_admin.mgmt_ok("PUT", f"/services/{service_id}", json={"name": data["name"], "encryptionRequired": True})
    assert ziti_admin.mgmt_ok("GET", f"/services/{service_id}")["encryptionRequired"] is False


def test_create_requires_name_and_encryption_required(ziti_admin, ziti_unique):
    assert_error(
        ziti_admin.mgmt("POST", "/services", json={"name": ziti_unique()}),
        400,
        "COULD_NOT_VALIDATE",
        "encryptionRequired",
    )
    assert_error(
        ziti_admin.mgmt("POST", "/services", json={"encryptionRequired": True}), 400, "COULD_NOT_VALIDATE", "name"
    )


def test_unknown_terminator_strategy_is_rejected(ziti_admin, ziti_unique):
    response = ziti_admin.mgmt(
        "POST", "/services", json={"name": ziti_unique(), "encryptionRequired": True, "terminatorStrategy": "nope"}
    )
    assert_error(response, 400, "COULD_NOT_VALIDATE", "terminatorStrategy")


def test_config_rules_one_per_type_service_target_known_id(ziti_admin, ziti_unique):
    first, second = proxy_config(ziti_admin, ziti_unique), proxy_config(ziti_admin, ziti_unique)
    body = {"name": ziti_unique(), "encryptionRequired": True}
    assert_error(
        ziti_admin.mgmt("POST", "/services", json={**body, "configs": [first, second]}),
        400,
        "COULD_NOT_VALIDATE",
        "configs",
    )
    router_config = ziti_admin.create("configs", {"name": ziti_unique(), "configTypeId": "router.link.v1", "data": {}})
    assert_error(
        ziti_admin.mgmt("POST", "/services", json={**body, "configs": [router_config]}),
        400,
        "COULD_NOT_VALIDATE",
        "configs",
    )
    assert_error(ziti_admin.mgmt("POST", "/services", json={**body, "configs": ["missing"]}), 404, "NOT_FOUND")


def test_role_attributes_are_validated_and_listed(ziti_admin, ziti_unique, make_service):
    bad = ziti_admin.mgmt(
        "POST", "/services", json={"name": ziti_unique(), "encryptionRequired": True, "roleAttributes": ["@x"]}
    )
    assert_error(bad, 400, "COULD_NOT_VALIDATE", "roleAttributes")
    attr = ziti_unique("attr")
    make_service(attrs=[attr, "shared"])
    listed = ziti_admin.mgmt("GET", "/service-role-attributes", params={"limit": 1}).json()
    assert attr in listed["data"] and listed["data"] == sorted(listed["data"])
    assert listed["meta"]["pagination"]["limit"] == 9223372036854775807
    assert ziti_admin.mgmt_ok("GET", "/service-role-attributes", params={"filter": f'id = "{attr}"'}) == [attr]


def test_role_filter_on_services(ziti_admin, ziti_unique, make_service):
    prefix = ziti_unique("rf")
    both = make_service(prefix + "-both", attrs=["red", "blue"])
    red = make_service(prefix + "-red", attrs=["red"])
    other = make_service(prefix + "-other")
    flt = {"filter": f'name contains "{prefix}"'}
    ids = lambda params: {s["id"] for s in ziti_admin.mgmt_ok("GET", "/services", params={**flt, **params})}  # noqa: E731
    assert ids({"roleFilter": ["#red", "#blue"]}) == {both}
    assert ids({"roleFilter": ["#red", "#blue"], "roleSemantic": "AnyOf"}) == {both, red}
    assert ids({"roleFilter": [f"@{other}"]}) == {other}
    assert_error(
        ziti_admin.mgmt("GET", "/services", params={"roleFilter": "red"}), 400, "COULD_NOT_VALIDATE", "roleFilter"
    )


def test_service_policies_and_identities_of_a_service(ziti_admin, make_identity, make_service, make_policy):
    service_id = make_service(attrs=["web"])
    dialer, binder = make_identity(roleAttributes=["dialers"]), make_identity(roleAttributes=["binders"])
    dial = make_policy("service-policies", type="Dial", identityRoles=["#dialers"], serviceRoles=["#web"])
    make_policy("service-policies", type="Bind", identityRoles=[f"@{binder}"], serviceRoles=[f"@{service_id}"])
    assert len(ziti_admin.mgmt_ok("GET", f"/services/{service_id}/service-policies")) == 2
    assert {i["id"] for i in ziti_admin.mgmt_ok("GET", f"/services/{service_id}/identities")} == {dialer, binder}
    dialers = ziti_admin.mgmt_ok("GET", f"/services/{service_id}/identities", params={"policyType": "dial"})
    assert [i["id"] for i in dialers] == [dialer]
    assert ziti_admin.mgmt("GET", f"/services/{service_id}/identities", params={"policyType": "x"}).status_code == 400
    assert [p["id"] for p in ziti_admin.mgmt_ok("GET", f"/identities/{dialer}/service-policies")] == [dial]


def test_edge_routers_of_a_service_follow_service_edge_router_policies(
    ziti_admin, make_service, make_edge_router, make_policy
):
    service_id = make_service(attrs=["web"])
    public = make_edge_router(attrs=["public"])
    make_edge_router(attrs=["private"])
    serp = make_policy("service-edge-router-policies", serviceRoles=["#web"], edgeRouterRoles=["#public"])
    assert [r["id"] for r in ziti_admin.mgmt_ok("GET", f"/services/{service_id}/edge-routers")] == [public]
    assert [p["id"] for p in ziti_admin.mgmt_ok("GET", f"/services/{service_id}/service-edge-router-policies")] == [
        serp
    ]
    assert [s["id"] for s in ziti_admin.mgmt_ok("GET", f"/edge-routers/{public}/services")] == [service_id]


def test_service_configs_listing(ziti_admin, ziti_unique, make_service):
    config_id = proxy_config(ziti_admin, ziti_unique)
    service_id = make_service(configs=[config_id])
    assert [c["id"] for c in ziti_admin.mgmt_ok("GET", f"/services/{service_id}/configs")] == [config_id]
    assert ziti_admin.mgmt("GET", "/services/missing/configs").status_code == 404


def test_terminators_need_service_and_router_and_go_with_them(ziti_admin, make_service, make_edge_router):
    service_id, router_id = make_service(), make_edge_router()
    body = {"service": service_id, "router": router_id, "address": "tcp:10.0.0.1:80", "binding": "transport"}
    terminator_id = ziti_admin.create("terminators", body)
    data = ziti_admin.mgmt_ok("GET", f"/terminators/{terminator_id}")
    assert data["serviceId"] == service_id and data["service"]["id"] == service_id and data["routerId"] == router_id
    assert data["cost"] == 0 and data["precedence"] == "default" and data["dynamicCost"] == 0
    assert [t["id"] for t in ziti_admin.mgmt_ok("GET", f"/services/{service_id}/terminators")] == [terminator_id]
    assert (
        ziti_admin.mgmt_ok("GET", "/terminators", params={"filter": f'service = "{service_id}"'})[0]["id"]
        == terminator_id
    )
    service_name = ziti_admin.mgmt_ok("GET", f"/services/{service_id}")["name"]
    by_name = ziti_admin.mgmt_ok("GET", "/terminators", params={"filter": f'service.name = "{service_name}"'})
    assert [t["id"] for t in by_name] == [terminator_id]
    assert_error(ziti_admin.mgmt("POST", "/terminators", json={**body, "service": "missing"}), 404, "NOT_FOUND")
    assert_error(
        ziti_admin.mgmt("POST", "/terminators", json={**body, "precedence": "top"}),
        400,
        "COULD_NOT_VALIDATE",
        "precedence",
    )
    ziti_admin.mgmt_ok("DELETE", f"/services/{service_id}")
    assert ziti_admin.mgmt("GET", f"/terminators/{terminator_id}").status_code == 404
    second = ziti_admin.create("terminators", {**body, "service": make_service()})
    ziti_admin.mgmt_ok("DELETE", f"/edge-routers/{router_id}")
    assert ziti_admin.mgmt("GET", f"/terminators/{second}").status_code == 404


def test_client_api_service_writes_need_admin(ziti, ziti_admin, make_service, make_client):
    service_id = make_service()
    _, client = make_client()
    assert_error(client.edge("PATCH", f"/services/{service_id}", json={"maxIdleTimeMillis": 5}), 401, "UNAUTHORIZED")
    ziti_admin.edge("PATCH", f"/services/{service_id}", json={"maxIdleTimeMillis": 5})
    assert ziti_admin.mgmt_ok("GET", f"/services/{service_id}")["maxIdleTimeMillis"] == 5


def test_as_identity_lists_what_that_identity_sees(ziti_admin, make_identity, make_service, make_policy):
    identity_id = make_identity(roleAttributes=["asi"])
    seen, make_service_unseen = make_service(attrs=["asi-svc"]), make_service()
    make_policy("service-policies", type="Bind", identityRoles=["#asi"], serviceRoles=["#asi-svc"])
    listed = ziti_admin.mgmt_ok("GET", "/services", params={"asIdentity": identity_id, "limit": -1})
    assert [(s["id"], s["permissions"]) for s in listed] == [(seen, ["Bind"])]
    assert make_service_unseen not in {s["id"] for s in listed}
    assert ziti_admin.mgmt("GET", "/services", params={"asIdentity": "nobody"}).status_code == 404
