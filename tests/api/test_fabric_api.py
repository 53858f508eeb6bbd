"""The fabric management API at /fabric/v1, as the Admin Console and ``ziti fabric`` read it.

Routers, services and terminators are created through the APIs; links and circuits come from routers,
so where no router in a unit test can make one, the records go in through ``Fabric.link_up`` and
``Fabric.circuit_up`` (the contract the router network fills) and the API is read.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest

from controller.fabric.state import Circuit, Link
from tests.api.reference_operations import ALWAYS, REFERENCE
from tests.support import assert_error

FABRIC = "/fabric/v1"
FABRIC_ROWS = [row for row in REFERENCE if row["api"] == "fabric"]
WHEN = datetime(2025, 6, 1, 12, 0, tzinfo=timezone.utc)


def fab(client, method: str, path: str, **kwargs):
    return client.request(method, FABRIC + path, **kwargs)


def fab_ok(client, method: str, path: str, **kwargs):
    response = fab(client, method, path, **kwargs)
    assert response.status_code < 300, response.text
    return response.json()


@pytest.fixture
def fabric(ziti_app):
    """The live links and circuits of the test's controller (what routers report)."""
    return ziti_app.controller.routing.fabric


def test_version_advertises_the_fabric_api_with_the_real_path_shape(ziti):
    data = ziti.edge.call("listVersion")
    assert data["apiVersions"]["fabric"] == {
        "v1": {"apiBaseUrls": ["https://127.0.0.1:1280/fabric/v1"], "path": "/fabric/v1", "version": "v1"}
    }


def test_every_fabric_operation_is_admin_only(ziti, ziti_admin, ziti_unique):
    """No session, a non-admin's session: 401 in the envelope; an admin's: neither 401 nor 405 nor 5xx."""
    user = ziti_unique("user")
    identity_id = ziti_admin.create("identities", {"name": user, "type": "User", "isAdmin": False})
    ziti_admin.create(
        "authenticators", {"identityId": identity_id, "method": "updb", "username": user, "password": "pw-12345"}
    )
    non_admin = ziti.signed_in(user, "pw-12345")  # one login for every row: password hashing is slow by design
    assert len(FABRIC_ROWS) >= 30
    for row in FABRIC_ROWS:
        path = FABRIC + re.sub(r"{\w+}", "some-id", row["path"])
        body = {} if row["method"] != "GET" else None
        assert_error(ziti.request(row["method"], path, json=body), 401, "UNAUTHORIZED")
        assert_error(non_admin.request(row["method"], path, json=body), 401, "UNAUTHORIZED")
        response = ziti_admin.request(row["method"], path, json=body)
        assert response.status_code not in (401, 405) and response.status_code < 500, (row, response.text)


def test_an_oidc_bearer_token_reads_the_fabric_api(ziti):
    ziti.login("admin", "admin", oidc="go")
    assert ziti.oidc is not None and ziti.token is None  # no zt-session: the bearer token alone
    response = ziti.raw.get(FABRIC + "/routers", headers={"Authorization": f"Bearer {ziti.oidc.access_token}"})
    assert response.status_code == 200 and response.json()["meta"]["pagination"]["totalCount"] == 0
    assert ziti.fabric.list_links() == []


def test_routers_of_every_kind_in_the_fabric_shape(ziti_admin, ziti_unique):
    edge_id = ziti_admin.create("edge-routers", {"name": ziti_unique("er"), "cost": 7, "noTraversal": True})
    transit_id = ziti_admin.create("transit-routers", {"name": ziti_unique("tr"), "disabled": True})
    listed = fab_ok(ziti_admin, "GET", "/routers")
    assert {r["id"] for r in listed["data"]} == {edge_id, transit_id}
    assert "connected" in listed["meta"]["filterableFields"] and listed["meta"]["pagination"]["totalCount"] == 2
    router = fab_ok(ziti_admin, "GET", f"/routers/{edge_id}")["data"]
    assert router["_links"] == {
        "self": {"href": f"./routers/{edge_id}"},
        "terminators": {"href": f"./routers/{edge_id}/terminators"},
    }
    assert (router["connected"], router["cost"], router["noTraversal"], router["disabled"]) == (False, 7, True, False)
    assert router["fingerprint"] is None and router["listenerAddresses"] == [] and router["interfaces"] == []
    for field in ("createdAt", "updatedAt", "tags", "name", "ctrlChanListeners", "configs", "versionInfo"):
        assert field in router
    assert "isOnline" not in router and "roleAttributes" not in router
    assert fab_ok(ziti_admin, "GET", f"/routers/{transit_id}")["data"]["disabled"] is True


def test_router_filters_paging_and_sort_are_edge_managements(ziti_admin, ziti_unique):
    names = sorted(ziti_unique(f"r{i}") for i in range(5))
    for i, name in enumerate(names):
        ziti_admin.create("transit-routers", {"name": name, "cost": i})
    page = fab_ok(
        ziti_admin, "GET", "/routers", params={"filter": "cost >= 2 sort by name desc", "limit": 2, "offset": 1}
    )
    assert [r["name"] for r in page["data"]] == [names[3], names[2]]
    assert page["meta"]["pagination"] == {"limit": 2, "offset": 1, "totalCount": 3}
    assert (
        fab_ok(ziti_admin, "GET", "/routers", params={"filter": "connected = false"})["meta"]["pagination"][
            "totalCount"
        ]
        == 5
    )
    assert_error(fab(ziti_admin, "GET", "/routers", params={"filter": "nope = 1"}), 400, "INVALID_FILTER")


def test_create_update_patch_delete_a_router_with_its_id_and_fingerprint(ziti_admin, ziti_unique):
    router_id, name = ziti_unique("rid"), ziti_unique("router")
    body = {"id": router_id, "name": name, "cost": 10, "noTraversal": False, "fingerprint": "ab12"}
    created = fab(ziti_admin, "POST", "/routers", json=body)
    assert created.status_code == 201
    assert created.json()["data"] == {"_links": {"self": {"href": f"./routers/{router_id}"}}, "id": router_id}
    router = fab_ok(ziti_admin, "GET", f"/routers/{router_id}")["data"]
    assert (router["name"], router["cost"], router["fingerprint"]) == (name, 10, "ab12")
    duplicate = {**body, "fingerprint": "ef56"}
    assert_error(fab(ziti_admin, "POST", "/routers", json=duplicate), 400, "COULD_NOT_VALIDATE", "id")
    assert_error(
        fab(ziti_admin, "POST", "/routers", json={**body, "id": ziti_unique("other")}),
        400,
        "COULD_NOT_VALIDATE",
        "fingerprint",
    )
    assert_error(fab(ziti_admin, "POST", "/routers", json={"name": ziti_unique()}), 400, "COULD_NOT_VALIDATE")
    update = {"name": name, "fingerprint": "cd34", "cost": 3, "noTraversal": True}
    assert fab(ziti_admin, "PUT", f"/routers/{router_id}", json=update).status_code == 200
    router = fab_ok(ziti_admin, "GET", f"/routers/{router_id}")["data"]
    assert (router["fingerprint"], router["cost"], router["noTraversal"]) == ("cd34", 3, True)
    assert fab(ziti_admin, "PATCH", f"/routers/{router_id}", json={"disabled": True}).status_code == 200
    assert fab_ok(ziti_admin, "GET", f"/routers/{router_id}")["data"]["disabled"] is True
    assert ziti_admin.mgmt_ok("GET", f"/routers/{router_id}")["name"] == name  # the same record as edge management
    assert fab(ziti_admin, "DELETE", f"/routers/{router_id}").status_code == 200
    assert_error(fab(ziti_admin, "GET", f"/routers/{router_id}"), 404, "NOT_FOUND")


def test_services_and_terminators_in_the_fabric_shape(ziti_admin, ziti_unique):
    service_id = ziti_admin.create(
        "services", {"name": ziti_unique("svc"), "encryptionRequired": True, "terminatorStrategy": "weighted"}
    )
    router_id = ziti_admin.create("transit-routers", {"name": ziti_unique("tr")})
    service = fab_ok(ziti_admin, "GET", f"/services/{service_id}")["data"]
    assert service["terminatorStrategy"] == "weighted" and service["maxIdleTimeMillis"] == 0
    assert service["_links"]["terminators"] == {"href": f"./services/{service_id}/terminators"}
    assert "encryptionRequired" not in service and "permissions" not in service
    created = fab(
        ziti_admin,
        "POST",
        "/terminators",
        json={
            "service": service_id,
            "router": router_id,
            "binding": "transport",
            "address": "tcp:127.0.0.1:8080",
            "instanceId": "host-1",
            "cost": 5,
            "precedence": "required",
        },
    )
    assert created.status_code == 201
    terminator_id = created.json()["data"]["id"]
    terminator = fab_ok(ziti_admin, "GET", f"/terminators/{terminator_id}")["data"]
    assert (terminator["serviceId"], terminator["routerId"], terminator["instanceId"]) == (
        service_id,
        router_id,
        "host-1",
    )
    assert (terminator["cost"], terminator["precedence"], terminator["binding"]) == (5, "required", "transport")
    assert terminator["router"]["_links"]["self"]["href"] == f"./routers/{router_id}"
    assert terminator["service"]["entity"] == "services" and terminator["service"]["id"] == service_id
    for path in (f"/services/{service_id}/terminators", f"/routers/{router_id}/terminators", "/terminators"):
        assert [t["id"] for t in fab_ok(ziti_admin, "GET", path)["data"]] == [terminator_id], path
    assert fab(ziti_admin, "PATCH", f"/terminators/{terminator_id}", json={"cost": 9}).status_code == 200
    assert fab_ok(ziti_admin, "GET", f"/terminators/{terminator_id}")["data"]["cost"] == 9
    replacement = {"service": service_id, "router": router_id, "binding": "transport", "address": "tcp:127.0.0.1:9090"}
    assert fab(ziti_admin, "PUT", f"/terminators/{terminator_id}", json=replacement).status_code == 200
    terminator = fab_ok(ziti_admin, "GET", f"/terminators/{terminator_id}")["data"]
    assert (terminator["address"], terminator["cost"], terminator["instanceId"]) == ("tcp:127.0.0.1:9090", 0, "host-1")
    assert fab(ziti_admin, "DELETE", f"/terminators/{terminator_id}").status_code == 200
    assert fab_ok(ziti_admin, "GET", f"/services/{service_id}/terminators")["data"] == []
    assert_error(fab(ziti_admin, "GET", "/services/nope/terminators"), 404, "NOT_FOUND")


def test_a_fabric_service_create_answers_201_with_its_location(ziti_admin, ziti_unique):
    response = fab(ziti_admin, "POST", "/services", json={"name": ziti_unique("svc"), "terminatorStrategy": "random"})
    assert response.status_code == 201
    service_id = response.json()["data"]["id"]
    assert fab_ok(ziti_admin, "GET", f"/services/{service_id}")["data"]["terminatorStrategy"] == "random"


def test_a_fabric_put_keeps_a_services_edge_fields(ziti_admin, ziti_unique):
    [host] = ziti_admin.management.call("listConfigTypes", filter='name="host.v1"')
    data = {"protocol": "tcp", "address": "127.0.0.1", "port": 1}
    config_id = ziti_admin.create("configs", {"name": ziti_unique("cfg"), "configTypeId": host["id"], "data": data})
    body = {"name": ziti_unique("svc"), "encryptionRequired": True, "roleAttributes": ["web"], "configs": [config_id]}
    service_id = ziti_admin.create("services", body)
    renamed = ziti_unique("renamed")
    assert (
        fab(ziti_admin, "PUT", f"/services/{service_id}", json={"name": renamed, "maxIdleTimeMillis": 500}).status_code
        == 200
    )
    service = ziti_admin.mgmt_ok("GET", f"/services/{service_id}")
    assert (service["name"], service["maxIdleTimeMillis"], service["terminatorStrategy"]) == (
        renamed,
        500,
        "smartrouting",
    )
    assert service["roleAttributes"] == ["web"] and service["configs"] == [config_id]
    assert_error(
        fab(ziti_admin, "PUT", f"/services/{service_id}", json={"terminatorStrategy": "random"}),
        400,
        "COULD_NOT_VALIDATE",
    )


def _two_routers(ziti_admin, ziti_unique) -> tuple[str, str]:
    return ziti_admin.create("transit-routers", {"name": ziti_unique("a")}), ziti_admin.create(
        "transit-routers", {"name": ziti_unique("b")}
    )


def test_links_as_routers_report_them(ziti_admin, fabric, ziti_unique):
    a, b = _two_routers(ziti_admin, ziti_unique)
    fabric.link_up(Link("link-1", a, b, WHEN, static_cost=2, src_latency_ns=3_000_000, dst_latency_ns=5_000_000))
    fabric.link_up(Link("link-2", b, a, WHEN, state="Pending"))
    listed = fab_ok(ziti_admin, "GET", "/links")
    assert sorted(link["id"] for link in listed["data"]) == ["link-1", "link-2"]
    link = fab_ok(ziti_admin, "GET", "/links/link-1")["data"]
    assert link["sourceRouter"]["id"] == a and link["destRouter"]["id"] == b
    assert link["sourceRouter"]["_links"]["self"]["href"] == f"./routers/{a}"
    assert link["sourceRouter"]["name"] == fab_ok(ziti_admin, "GET", f"/routers/{a}")["data"]["name"]
    assert (link["staticCost"], link["sourceLatency"], link["destLatency"], link["cost"]) == (
        2,
        3_000_000,
        5_000_000,
        6,
    )
    assert (link["protocol"], link["state"], link["down"], link["iteration"]) == ("tls", "Connected", False, 1)
    only = fab_ok(ziti_admin, "GET", "/links", params={"filter": f'sourceRouter = "{b}"'})["data"]
    assert [x["id"] for x in only] == ["link-2"]
    assert fab(ziti_admin, "PATCH", "/links/link-1", json={"down": True, "staticCost": 20}).status_code == 200
    link = fab_ok(ziti_admin, "GET", "/links/link-1")["data"]
    assert (link["down"], link["staticCost"], link["cost"]) == (True, 20, 24)
    assert fab(ziti_admin, "DELETE", "/links/link-2").status_code == 200
    assert_error(fab(ziti_admin, "GET", "/links/link-2"), 404, "NOT_FOUND")
    assert_error(fab(ziti_admin, "PATCH", "/links/link-2", json={"down": True}), 404, "NOT_FOUND")
    assert_error(fab(ziti_admin, "PATCH", "/links/link-1", json={"staticCost": "x"}), 400, "COULD_NOT_VALIDATE")


def test_circuits_with_their_path(ziti_admin, fabric, ziti_unique):
    a, b = _two_routers(ziti_admin, ziti_unique)
    service_id = ziti_admin.create("services", {"name": ziti_unique("svc"), "encryptionRequired": True})
    terminator_id = ziti_admin.create(
        "terminators", {"service": service_id, "router": b, "binding": "transport", "address": "tcp:x:1"}
    )
    fabric.link_up(Link("link-ab", a, b, WHEN))
    fabric.circuit_up(Circuit("c-1", service_id, "client-1", terminator_id, WHEN, (a, b), ("link-ab",)))
    listed = fab_ok(ziti_admin, "GET", "/circuits")
    assert [c["id"] for c in listed["data"]] == ["c-1"] and listed["meta"]["pagination"]["totalCount"] == 1
    circuit = fab_ok(ziti_admin, "GET", "/circuits/c-1")["data"]
    assert circuit["_links"]["self"]["href"] == "./circuits/c-1" and circuit["createdAt"] == "2025-06-01T12:00:00.000Z"
    assert circuit["clientId"] == "client-1" and circuit["service"]["id"] == service_id
    assert circuit["terminator"]["id"] == terminator_id and circuit["terminator"]["entity"] == "terminators"
    assert [n["id"] for n in circuit["path"]["nodes"]] == [a, b]
    assert [n["id"] for n in circuit["path"]["links"]] == ["link-ab"]
    assert fab_ok(ziti_admin, "GET", "/circuits", params={"filter": 'clientId = "other"'})["data"] == []
    assert fab(ziti_admin, "DELETE", "/circuits/c-1", json={"immediate": True}).status_code == 200
    assert_error(fab(ziti_admin, "GET", "/circuits/c-1"), 404, "NOT_FOUND")
    assert_error(fab(ziti_admin, "DELETE", "/circuits/c-1"), 404, "NOT_FOUND")


def test_link_and_circuit_listings_page_like_edge_management(ziti_admin, fabric, ziti_unique):
    a, b = _two_routers(ziti_admin, ziti_unique)
    for i in range(12):
        fabric.link_up(Link(f"l{i:02d}", a, b, WHEN))
    first = fab_ok(ziti_admin, "GET", "/links")
    assert len(first["data"]) == 10 and first["meta"]["pagination"] == {"limit": 10, "offset": 0, "totalCount": 12}
    rest = fab_ok(ziti_admin, "GET", "/links", params={"filter": "true sort by id skip 10 limit 5"})
    assert [x["id"] for x in rest["data"]] == ["l10", "l11"]


def test_inspect_answers_for_the_controller(ziti_admin, ziti_app):
    instance = ziti_app.controller.instance_id
    body = {"appRegex": ".*", "requestedValues": ["stackdump", "nothing"]}
    data = fab_ok(ziti_admin, "POST", "/inspections", json=body)["data"]
    assert data["success"] is False and data["errors"] and [v["name"] for v in data["values"]] == ["stackdump"]
    assert data["values"][0]["appId"] == instance and "thread" in data["values"][0]["value"]
    assert fab_ok(ziti_admin, "POST", "/inspections", json={"appRegex": "^nobody$", "requestedValues": ["links"]})[
        "data"
    ] == {"success": True, "errors": [], "values": []}
    assert_error(
        fab(ziti_admin, "POST", "/inspections", json={"appRegex": "(", "requestedValues": []}),
        400,
        "COULD_NOT_VALIDATE",
        "appRegex",
    )
    assert_error(fab(ziti_admin, "POST", "/inspections", json={"appRegex": ".*"}), 400, "COULD_NOT_VALIDATE")


@pytest.mark.parametrize(
    "pattern",
    ["(" * 3000 + ")" * 3000, "[[#]", "x" * 300, "(?P<", "a{99999999999}"],
    ids=["deeply-nested", "nested-set", "too-long", "broken-group", "huge-repeat"],
)
def test_a_hostile_app_regex_is_a_400_naming_the_field(ziti_admin, pattern):
    response = fab(ziti_admin, "POST", "/inspections", json={"appRegex": pattern, "requestedValues": ["stackdump"]})
    if response.status_code == 200:  # a valid pattern that names no app of this controller ('#' is in no id)
        assert response.json()["data"]["values"] == []
    else:
        assert_error(response, 400, "COULD_NOT_VALIDATE", "appRegex")


def test_unknown_fabric_paths_are_404_in_the_envelope(ziti_admin):
    assert_error(fab(ziti_admin, "GET", "/no-such"), 404, "NOT_FOUND")
    assert_error(fab(ziti_admin, "GET", "/routers/nope"), 404, "NOT_FOUND")


def test_the_fabric_document_is_served_where_the_real_controller_serves_it_only(ziti):
    assert ziti.request("GET", "/fabric/v1/swagger.json").json()["basePath"] == "/fabric/v1"
    assert ziti.request("GET", "/edge/management/v1/specs/fabric/spec").status_code == 404  # as the real one
    for prefix in ("/edge/client/v1", "/edge/management/v1"):
        assert ziti.request("GET", f"{prefix}/swagger.json").json()["basePath"] == prefix


def test_the_served_fabric_document_lists_every_fabric_operation(ziti):
    document = ziti.request("GET", "/fabric/v1/swagger.json").json()
    assert document["basePath"] == "/fabric/v1"
    served = {(m.upper(), p): op["operationId"] for p, ops in document["paths"].items() for m, op in ops.items()}
    rows = REFERENCE + ALWAYS  # the real operations and this controller's own (getRouterServicePaths)
    expected = {(row["method"], row["path"]): row["operationId"] for row in rows if row["api"] == "fabric"}
    assert served == expected


def test_the_embedded_router_is_connected_in_the_fabric_api(ziti_quickstart):
    ziti_admin = ziti_quickstart.admin
    [router] = ziti_admin.fabric.call("listRouters", filter='name="quickstart-router"')
    assert router["connected"] is True and router["fingerprint"]
    assert router["versionInfo"]["version"]
    edge = ziti_admin.management.call("detailEdgeRouter", router["id"])
    assert edge["fingerprint"] == router["fingerprint"] and edge["isOnline"] is True
