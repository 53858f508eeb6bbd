"""API conventions shared by every resource: envelopes, errors, aliases, paging."""

from __future__ import annotations

import pytest

from controller.config import Config
from tests.support import assert_error


def test_success_envelope_has_data_and_empty_meta(ziti):
    response = ziti.edge("GET", "/version")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"data", "meta"} and body["meta"] == {}


@pytest.mark.parametrize("ziti_config", [Config(oidc=False)], ids=["oidc-off"])
def test_version_advertises_edge_path_and_no_oidc(ziti):
    data = ziti.edge_ok("GET", "/version")
    assert data["apiVersions"]["edge"]["v1"]["path"] == "/edge/client/v1"
    assert data["apiVersions"]["edge-management"]["v1"]["path"] == "/edge/management/v1"
    assert data["capabilities"] == []
    assert "edge-oidc" not in data["apiVersions"]


@pytest.mark.parametrize(
    "path", ["/version", "/", "/edge/v1/version", "/edge/client/v1/version", "/edge/management/v1/version"]
)
def test_version_is_served_at_every_alias(ziti, path):
    response = ziti.request("GET", path)
    assert response.status_code == 200
    assert response.json()["data"]["apiVersions"]["edge"]["v1"]["path"] == "/edge/client/v1"


def test_unprefixed_authenticate_is_the_client_api(ziti):
    response = ziti.request(
        "POST", "/authenticate", params={"method": "password"}, json={"username": "admin", "password": "admin"}
    )
    assert response.status_code == 200
    assert response.json()["data"]["token"]


def test_every_reply_carries_instance_id_and_server(ziti):
    first = ziti.edge("GET", "/version").headers
    second = ziti.mgmt("GET", "/nope").headers
    assert first["ziti-instance-id"] == second["ziti-instance-id"]
    assert first["server"].startswith("ziti-controller/")


def test_create_answers_201_with_links_and_id(ziti_admin, ziti_unique):
    response = ziti_admin.mgmt("POST", "/identities", json={"name": ziti_unique(), "type": "User", "isAdmin": False})
    assert response.status_code == 201
    data = response.json()["data"]
    assert data["_links"]["self"]["href"] == f"./identities/{data['id']}"
    assert response.json()["meta"] == {}


def test_update_patch_delete_answer_empty_data(ziti_admin, make_identity):
    identity_id = make_identity()
    for method, body in (
        ("PATCH", {"roleAttributes": ["a"]}),
        ("PUT", {"name": "renamed-" + identity_id, "type": "User", "isAdmin": False}),
    ):
        response = ziti_admin.mgmt(method, f"/identities/{identity_id}", json=body)
        assert response.status_code == 200 and response.json() == {"data": {}, "meta": {}}
    response = ziti_admin.mgmt("DELETE", f"/identities/{identity_id}")
    assert response.status_code == 200 and response.json() == {"data": {}, "meta": {}}


def test_unknown_route_is_404_in_the_error_envelope(ziti_admin):
    assert_error(ziti_admin.mgmt("GET", "/no-such-thing"), 404, "NOT_FOUND")


def test_wrong_verb_is_405_in_the_error_envelope(ziti_admin):
    assert_error(ziti_admin.mgmt("PATCH", "/identities"), 405, "METHOD_NOT_ALLOWED")


def test_malformed_json_is_could_not_parse_body(ziti_admin):
    response = ziti_admin.mgmt(
        "POST", "/identities", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert_error(response, 400, "COULD_NOT_PARSE_BODY")


def test_unknown_id_is_404_not_found(ziti_admin):
    error = assert_error(ziti_admin.mgmt("GET", "/identities/doesnotexist"), 404, "NOT_FOUND")
    assert "doesnotexist" in error["cause"]["message"]


@pytest.mark.parametrize(
    "body, field",
    [
        ({"type": "User", "isAdmin": False}, "name"),
        ({"name": 5, "type": "User", "isAdmin": False}, "name"),
        ({"name": "n", "type": "Robot", "isAdmin": False}, "type"),
        ({"name": "n", "type": "User", "isAdmin": "yes"}, "isAdmin"),
        ({"name": "n", "type": "User", "isAdmin": False, "defaultHostingCost": 65536}, "defaultHostingCost"),
        ({"name": "n", "type": "User", "isAdmin": False, "defaultHostingCost": -1}, "defaultHostingCost"),
        (
            {"name": "n", "type": "User", "isAdmin": False, "defaultHostingPrecedence": "first"},
            "defaultHostingPrecedence",
        ),
        ({"name": "n", "type": "User", "isAdmin": False, "tags": {"nested": {"a": 1}}}, "tags.nested"),
        ({"name": "n", "type": "User", "isAdmin": False, "roleAttributes": "sales"}, "roleAttributes"),
    ],
)
def test_invalid_bodies_are_400_with_a_field_cause(ziti_admin, body, field):
    error = assert_error(ziti_admin.mgmt("POST", "/identities", json=body), 400, "COULD_NOT_VALIDATE", field)
    assert error["cause"]["reason"]


def test_body_that_is_not_an_object_is_400(ziti_admin):
    assert_error(ziti_admin.mgmt("POST", "/identities", json=[1, 2]), 400, "COULD_NOT_VALIDATE")


def test_duplicate_name_is_400_on_name(ziti_admin, ziti_unique):
    name = ziti_unique()
    ziti_admin.create("identities", {"name": name, "type": "User", "isAdmin": False})
    assert_error(
        ziti_admin.mgmt("POST", "/identities", json={"name": name, "type": "User", "isAdmin": False}),
        400,
        "COULD_NOT_VALIDATE",
        "name",
    )


def test_unsupported_content_type_is_415(ziti_admin):
    response = ziti_admin.mgmt(
        "POST", "/identities", content=b"name=x", headers={"content-type": "application/x-www-form-urlencoded"}
    )
    assert_error(response, 415, "UNSUPPORTED_MEDIA")


def test_oversized_body_is_413(ziti_admin):
    response = ziti_admin.mgmt(
        "POST",
        "/identities",
        content=b"{" + b" " * (1024 * 1024 + 10) + b"}",
        headers={"content-type": "application/json"},
    )
    assert_error(response, 413, "REQUEST_ENTITY_TOO_LARGE")


def test_bad_filter_is_invalid_filter_with_an_object_cause(ziti_admin):
    error = assert_error(ziti_admin.mgmt("GET", "/identities", params={"filter": "name = "}), 400, "INVALID_FILTER")
    assert error["cause"]["code"] == "UNHANDLED"


@pytest.mark.parametrize(
    "params, code", [({"limit": "x"}, "INVALID_PAGINATION"), ({"offset": "1.5"}, "INVALID_PAGINATION")]
)
def test_bad_paging_is_400(ziti_admin, params, code):
    assert_error(ziti_admin.mgmt("GET", "/identities", params=params), 400, code)


def test_list_meta_has_pagination_and_filterable_fields(ziti_admin, make_identity, ziti_unique):
    prefix = ziti_unique("page")
    for index in range(12):
        make_identity(f"{prefix}-{index:02d}")
    body = ziti_admin.mgmt("GET", "/identities", params={"filter": f'name contains "{prefix}"'}).json()
    assert body["meta"]["pagination"] == {"limit": 10, "offset": 0, "totalCount": 12}
    assert {"name", "roleAttributes", "isAdmin"} <= set(body["meta"]["filterableFields"])
    assert len(body["data"]) == 10


def test_limit_is_capped_at_500_and_none_is_unlimited(ziti_admin):
    assert ziti_admin.mgmt("GET", "/identities", params={"limit": 9000}).json()["meta"]["pagination"]["limit"] == 500
    response = ziti_admin.mgmt("GET", "/identities", params={"filter": "true limit none"})
    assert response.json()["meta"]["pagination"]["limit"] == 9223372036854775807


def test_filter_sort_skip_limit_through_the_api(ziti_admin, make_identity, ziti_unique):
    prefix = ziti_unique("sort")
    for index in range(6):
        make_identity(f"{prefix}-{index}")
    data = ziti_admin.mgmt_ok(
        "GET", "/identities", params={"filter": f'name contains "{prefix}" sort by name desc skip 1 limit 2'}
    )
    assert [d["name"] for d in data] == [f"{prefix}-4", f"{prefix}-3"]


def test_common_fields_are_rfc3339_with_milliseconds(ziti_admin, make_identity):
    data = ziti_admin.mgmt_ok("GET", f"/identities/{make_identity()}")
    for key in ("createdAt", "updatedAt"):
        assert len(data[key]) == 24 and data[key].endswith("Z") and data[key][19] == "."
    assert data["tags"] == {}


def test_tags_accept_null_string_boolean_values(ziti_admin, make_identity):
    identity_id = make_identity(tags={"a": None, "b": "x", "c": True})
    assert ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")["tags"] == {"a": None, "b": "x", "c": True}
