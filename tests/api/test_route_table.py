"""The route table, the mounted Falcon routes and the OpenAPI documents stay in step."""

from __future__ import annotations

import falcon.inspect
import pytest

from controller.api.openapi import to_swagger_schema
from controller.api.operations import CLIENT, MANAGEMENT, PREFIXES


def mounted(app) -> dict[str, set[str]]:
    out = {}
    for route in falcon.inspect.inspect_routes(app):
        out[route.path] = {m.method for m in route.methods if m.internal is False}
    return out


#: served beside the two APIs: the OIDC provider (documented extras, not operations of either API)
OIDC_ROUTES = {
    "/oidc/.well-known/openid-configuration": {"GET"},
    "/.well-known/openid-configuration": {"GET"},
    "/oidc/keys": {"GET"},
    "/oidc/authorize": {"GET", "POST"},
    "/oidc/authorize/callback": {"GET"},
    **{f"/oidc/login/{page}": {"GET", "POST"} for page in ("password", "username", "cert", "ext-jwt")},
    "/oidc/login/totp": {"POST"},
    "/oidc/login/totp/enroll": {"POST", "DELETE"},
    "/oidc/login/totp/enroll/verify": {"POST"},
    "/oidc/login/auth-queries": {"GET"},
    "/oidc/oauth/token": {"POST"},
    "/oidc/oauth/introspect": {"GET", "POST"},
    "/oidc/userinfo": {"GET", "POST"},
    "/oidc/revoke": {"POST"},
    "/oidc/end_session": {"GET", "POST"},
    "/oidc/logged-out": {"GET"},
}
#: each API's OpenAPI document where the real controller serves it (go-openapi's ``<basePath>/swagger.json``)
SWAGGER_ROUTES = {f"{prefix}/swagger.json": {"GET"} for prefix in PREFIXES.values()}


def test_every_operation_is_mounted_and_nothing_else(ziti_app):
    expected: dict[str, set[str]] = OIDC_ROUTES | SWAGGER_ROUTES
    for op in ziti_app.routes:
        for api in op.apis:
            path = PREFIXES[api] + ("" if op.path == "/" else op.path)
            expected.setdefault(path, set()).add(op.method)
    assert mounted(ziti_app) == expected


def test_operation_ids_are_unique_per_api(ziti_app):
    for api in (CLIENT, MANAGEMENT):
        ids = [op.op_id for op in ziti_app.routes.for_api(api)]
        assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


@pytest.mark.parametrize("spec_id, api_name", [("edge-client", CLIENT), ("edge-management", MANAGEMENT)])
def test_served_spec_documents_every_route(ziti_admin, ziti_app, spec_id, api_name):
    response = ziti_admin.mgmt("GET", f"/specs/{spec_id}/spec")
    assert response.status_code == 200
    doc = response.json()
    assert doc["swagger"] == "2.0" and doc["basePath"] == PREFIXES[api_name]
    documented = {
        (path, method.upper()): body["operationId"]
        for path, ops in doc["paths"].items()
        for method, body in ops.items()
    }
    table = {(op.path, op.method): op.op_id for op in ziti_app.routes.for_api(api_name)}
    assert documented == table


def test_spec_listing_and_detail(ziti_admin):
    listed = ziti_admin.mgmt_ok("GET", "/specs")
    assert [s["id"] for s in listed] == ["edge-client"]
    assert ziti_admin.mgmt_ok("GET", "/specs/edge-management")["name"] == "edge-management"
    assert ziti_admin.mgmt("GET", "/specs/nope").status_code == 404


def test_documented_bodies_are_swagger_schemas(ziti_app):
    for op in ziti_app.routes:
        if op.body is not None:
            text = repr(to_swagger_schema(op.body))
            assert "'null'" not in text, op.op_id
