"""Config types and configs: schemas, validation, references to and from services."""

from __future__ import annotations

from tests.support import assert_error

PORT_SCHEMA = {
    "type": "object",
    "properties": {"port": {"type": "integer", "minimum": 1}},
    "required": ["port"],
    "additionalProperties": False,
}


def test_built_in_config_types_exist_with_real_ids(ziti_admin):
    types = {t["id"]: t for t in ziti_admin.mgmt_ok("GET", "/config-types", params={"limit": -1})}
    assert types["g7cIWbcGg"]["name"] == "intercept.v1" and types["NH5p4FpGR"]["name"] == "host.v1"
    assert types["f2dd2df0-9c04-4b84-a91e-71437ac229f1"]["name"] == "ziti-tunneler-client.v1"
    assert types["router.link.v1"]["target"] == "router" and types["host.v2"]["target"] == "service"


def test_config_type_create_read_update(ziti_admin, ziti_unique):
    name = ziti_unique("ct")
    type_id = ziti_admin.create("config-types", {"name": name, "schema": PORT_SCHEMA, "tags": {"k": "v"}})
    data = ziti_admin.mgmt_ok("GET", f"/config-types/{type_id}")
    assert data["name"] == name and data["schema"] == PORT_SCHEMA and data["target"] == "service"
    assert data["tags"] == {"k": "v"} and data["_links"]["configs"]["href"] == f"./config-types/{type_id}/configs"
    ziti_admin.mgmt_ok("PATCH", f"/config-types/{type_id}", json={"name": name + "-renamed"})
    assert ziti_admin.mgmt_ok("GET", f"/config-types/{type_id}")["name"] == name + "-renamed"
    ziti_admin.mgmt_ok("PUT", f"/config-types/{type_id}", json={"name": name})
    assert ziti_admin.mgmt_ok("GET", f"/config-types/{type_id}")["schema"] == {}


def test_config_type_rejects_bad_schema_and_the_name_all(ziti_admin, ziti_unique):
    response = ziti_admin.mgmt("POST", "/config-types", json={"name": ziti_unique(), "schema": {"type": "array"}})
    assert_error(response, 400, "COULD_NOT_VALIDATE", "schema")
    response = ziti_admin.mgmt(
        "POST", "/config-types", json={"name": ziti_unique(), "schema": {"type": "object", "minProperties": "x"}}
    )
    assert_error(response, 400, "COULD_NOT_VALIDATE", "schema")
    assert_error(ziti_admin.mgmt("POST", "/config-types", json={"name": "all"}), 400, "COULD_NOT_VALIDATE", "name")


def test_config_data_is_validated_against_the_type_schema(ziti_admin, ziti_unique):
    type_id = ziti_admin.create("config-types", {"name": ziti_unique("ct"), "schema": PORT_SCHEMA})
    missing = ziti_admin.mgmt("POST", "/configs", json={"name": ziti_unique(), "configTypeId": type_id, "data": {}})
    assert "port" in assert_error(missing, 400, "COULD_NOT_VALIDATE", "(root)")["cause"]["reason"]
    wrong = ziti_admin.mgmt(
        "POST", "/configs", json={"name": ziti_unique(), "configTypeId": type_id, "data": {"port": 0}}
    )
    assert_error(wrong, 400, "COULD_NOT_VALIDATE", "port")
    config_id = ziti_admin.create("configs", {"name": ziti_unique(), "configTypeId": type_id, "data": {"port": 80}})
    assert_error(
        ziti_admin.mgmt("PATCH", f"/configs/{config_id}", json={"data": {"port": "x"}}),
        400,
        "COULD_NOT_VALIDATE",
        "port",
    )


def test_built_in_intercept_schema_applies(ziti_admin, ziti_unique):
    good = {"protocols": ["tcp"], "addresses": ["app.ziti"], "portRanges": [{"low": 80, "high": 80}]}
    ziti_admin.create("configs", {"name": ziti_unique(), "configTypeId": "g7cIWbcGg", "data": good})
    bad = ziti_admin.mgmt(
        "POST", "/configs", json={"name": ziti_unique(), "configTypeId": "g7cIWbcGg", "data": {**good, "protocols": []}}
    )
    assert_error(bad, 400, "COULD_NOT_VALIDATE", "protocols")


def test_config_needs_a_known_type_and_object_data(ziti_admin, ziti_unique):
    assert_error(
        ziti_admin.mgmt("POST", "/configs", json={"name": ziti_unique(), "configTypeId": "nope", "data": {}}),
        400,
        "COULD_NOT_VALIDATE",
        "type",
    )
    assert_error(
        ziti_admin.mgmt("POST", "/configs", json={"name": ziti_unique(), "configTypeId": "g7cIWbcGg", "data": [1]}),
        400,
        "COULD_NOT_VALIDATE",
        "data",
    )


def test_config_type_cannot_change_and_data_is_replaced_whole(ziti_admin, ziti_unique):
    config_id = ziti_admin.create(
        "configs", {"name": ziti_unique(), "configTypeId": "proxy.v1", "data": {"port": 8080, "protocols": ["tcp"]}}
    )
    ziti_admin.mgmt_ok(
        "PATCH", f"/configs/{config_id}", json={"configTypeId": "host.v2", "data": {"port": 9, "protocols": ["udp"]}}
    )
    data = ziti_admin.mgmt_ok("GET", f"/configs/{config_id}")
    assert data["configTypeId"] == "proxy.v1" and data["configType"]["name"] == "proxy.v1"
    assert data["data"] == {"port": 9, "protocols": ["udp"]}


def test_config_type_with_configs_cannot_be_deleted(ziti_admin, ziti_unique):
    type_id = ziti_admin.create("config-types", {"name": ziti_unique("ct")})
    config_id = ziti_admin.create("configs", {"name": ziti_unique(), "configTypeId": type_id, "data": {"a": 1}})
    error = assert_error(ziti_admin.mgmt("DELETE", f"/config-types/{type_id}"), 409, "CAN_NOT_DELETE_REFERENCED_ENTITY")
    assert error["cause"]["value"] == config_id
    ziti_admin.mgmt_ok("DELETE", f"/configs/{config_id}")
    ziti_admin.mgmt_ok("DELETE", f"/config-types/{type_id}")


def test_configs_of_a_type_and_services_of_a_config(ziti_admin, ziti_unique, make_service):
    type_id = ziti_admin.create("config-types", {"name": ziti_unique("ct")})
    config_id = ziti_admin.create("configs", {"name": ziti_unique(), "configTypeId": type_id, "data": {}})
    service_id = make_service(configs=[config_id])
    make_service()
    assert [c["id"] for c in ziti_admin.mgmt_ok("GET", f"/config-types/{type_id}/configs")] == [config_id]
    assert [s["id"] for s in ziti_admin.mgmt_ok("GET", f"/configs/{config_id}/services")] == [service_id]
    assert ziti_admin.mgmt("GET", "/configs/missing/services").status_code == 404


def test_deleting_a_config_removes_it_from_services(ziti_admin, ziti_unique, make_service):
    config_id = ziti_admin.create(
        "configs", {"name": ziti_unique(), "configTypeId": "proxy.v1", "data": {"port": 1, "protocols": ["tcp"]}}
    )
    service_id = make_service(configs=[config_id])
    ziti_admin.mgmt_ok("DELETE", f"/configs/{config_id}")
    assert ziti_admin.mgmt_ok("GET", f"/services/{service_id}")["configs"] == []


def test_configs_filter_by_type(ziti_admin, ziti_unique):
    prefix = ziti_unique("cf")
    config_id = ziti_admin.create(
        "configs", {"name": prefix + "-a", "configTypeId": "proxy.v1", "data": {"port": 1, "protocols": ["tcp"]}}
    )
    found = ziti_admin.mgmt_ok("GET", "/configs", params={"filter": f'type = "proxy.v1" and name contains "{prefix}"'})
    assert [c["id"] for c in found] == [config_id]
