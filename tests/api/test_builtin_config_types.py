"""Built-in config types as the Admin Console edits them (issue 31).

The console's config editor draws a form from the config type's schema and sends every top-level property declared
``type: array`` back as ``[]`` when it is empty. The real built-in types declare their optional arrays as ``allOf``
of an inhabited set and its items (no top-level ``type``), so an edited config saves; ours must too.
"""

from __future__ import annotations

import pytest

from controller.model.builtin import bootstrap_builtins
from controller.store.db import Store
from tests.support import assert_error

INTERCEPT = {
    "protocols": ["tcp", "udp"],
    "addresses": ["*.ziti.test", "10.1.0.0/16"],
    "portRanges": [{"low": 80, "high": 443}],
}
HOST = {"protocol": "tcp", "address": "127.0.0.1", "port": 8080}
MADE_BY_THE_WIZARD = {
    "intercept.v1": INTERCEPT,
    "host.v1": HOST,
    "host.v2": {"terminators": [HOST]},
    "ziti-tunneler-client.v1": {"hostname": "app.ziti", "port": 80},
    "ziti-tunneler-server.v1": {"hostname": "127.0.0.1", "port": 80},
    "interfaces.v1": {"interfaces": []},
}
# the top-level properties of OpenZiti v2.0.3's built-in types (controller/db/migration_initialize.go)
REAL_PROPERTIES = {
    "intercept.v1": {"protocols", "addresses", "portRanges", "dialOptions", "sourceIp", "allowedSourceAddresses"},
    "host.v1": {
        "protocol", "forwardProtocol", "allowedProtocols", "address", "forwardAddress", "allowedAddresses",
        "forwardAddressTranslations", "port", "forwardPort", "allowedPortRanges", "allowedSourceAddresses", "proxy",
        "listenOptions", "portChecks", "httpChecks",
    },
    "host.v2": {"terminators"},
    "ziti-tunneler-client.v1": {"hostname", "port"},
    "ziti-tunneler-server.v1": {"protocol", "hostname", "port", "portChecks", "httpChecks"},
}  # fmt: skip


def as_the_console_saves(schema: dict, data: dict) -> dict:
    """The editor's output: the data, plus ``[]`` for every ``type: array`` property left empty."""
    empty = {name: [] for name, prop in schema.get("properties", {}).items() if prop.get("type") == "array"}
    return {**empty, **data}


def config_types(ziti_admin) -> dict:
    return {t["name"]: t for t in ziti_admin.mgmt_ok("GET", "/config-types", params={"limit": -1})}


@pytest.mark.parametrize("type_name", sorted(MADE_BY_THE_WIZARD))
def test_a_config_edited_in_the_console_saves(ziti_admin, ziti_unique, type_name):
    config_type = config_types(ziti_admin)[type_name]
    data = MADE_BY_THE_WIZARD[type_name]
    config_id = ziti_admin.create(
        "configs", {"name": ziti_unique("cfg"), "configTypeId": config_type["id"], "data": data}
    )
    edited = as_the_console_saves(config_type["schema"], data)
    ziti_admin.mgmt_ok("PATCH", f"/configs/{config_id}", json={"data": edited})
    assert ziti_admin.mgmt_ok("GET", f"/configs/{config_id}")["data"] == edited


@pytest.mark.parametrize("type_name", sorted(REAL_PROPERTIES))
def test_built_in_types_have_the_real_properties_and_no_others(ziti_admin, type_name):
    assert set(config_types(ziti_admin)[type_name]["schema"]["properties"]) == REAL_PROPERTIES[type_name]


def test_optional_arrays_present_still_need_an_item(ziti_admin, ziti_unique):
    for field in ("allowedSourceAddresses", "protocols"):
        body = {"name": ziti_unique(), "configTypeId": "g7cIWbcGg", "data": {**INTERCEPT, field: []}}
        assert_error(ziti_admin.mgmt("POST", "/configs", json=body), 400, "COULD_NOT_VALIDATE", field)
    host = {"name": ziti_unique(), "configTypeId": "NH5p4FpGR", "data": {**HOST, "allowedSourceAddresses": []}}
    assert_error(ziti_admin.mgmt("POST", "/configs", json=host), 400, "COULD_NOT_VALIDATE", "allowedSourceAddresses")


def test_forward_fields_need_their_allowed_sets(ziti_admin, ziti_unique):
    data = {"forwardProtocol": True, "address": "127.0.0.1", "port": 80}
    body = {"name": ziti_unique(), "configTypeId": "NH5p4FpGR", "data": data}
    assert ziti_admin.mgmt("POST", "/configs", json=body).status_code == 400
    body["data"] = {**data, "allowedProtocols": ["tcp"]}
    assert ziti_admin.mgmt("POST", "/configs", json=body).status_code == 201


def test_a_database_from_an_earlier_release_gets_the_current_schemas():
    store = Store(None)
    bootstrap_builtins(store, "2026-01-01T00:00:00Z")
    old = store.get("config_types", "g7cIWbcGg")
    store.put("config_types", "g7cIWbcGg", {**old, "schema": {"type": "object"}})
    bootstrap_builtins(store, "2026-02-01T00:00:00Z")
    again = store.get("config_types", "g7cIWbcGg")
    assert again["schema"] == old["schema"] and again["updated_at"] == "2026-02-01T00:00:00Z"
    assert again["created_at"] == old["created_at"]
