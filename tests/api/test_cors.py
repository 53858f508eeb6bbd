"""CORS on both APIs as the real controller (gorilla/handlers with origin ``*``, credentials, preflight 200)."""

from __future__ import annotations

import pytest

ORIGIN = "https://console.example"
PREFLIGHT_PATHS = ["/edge/management/v1/identities", "/edge/client/v1/authenticate", "/version", "/no/such/path"]


@pytest.mark.parametrize("path", PREFLIGHT_PATHS)
def test_preflight_is_200_with_the_allowed_headers(ziti, path):
    response = ziti.request(
        "OPTIONS",
        path,
        headers={
            "Origin": ORIGIN,
            "Access-Control-Request-Method": "PATCH",
            "Access-Control-Request-Headers": "content-type, zt-session, Authorization, accept",
        },
    )
    assert response.status_code == 200 and response.content == b""
    assert response.headers["access-control-allow-origin"] == "*"
    assert response.headers["access-control-allow-credentials"] == "true"
    assert response.headers["access-control-allow-methods"] == "PATCH"
    assert response.headers["access-control-allow-headers"] == "Content-Type,Zt-Session,Authorization"


def test_preflight_refuses_unlisted_headers_methods_and_a_missing_method(ziti):
    base = {"Origin": ORIGIN}
    path = "/edge/management/v1/identities"
    assert (
        ziti.request(
            "OPTIONS",
            path,
            headers={**base, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "x-secret"},
        ).status_code
        == 403
    )
    assert ziti.request("OPTIONS", path, headers={**base, "Access-Control-Request-Method": "TRACE"}).status_code == 405
    assert ziti.request("OPTIONS", path, headers=base).status_code == 400
    plain = ziti.request("OPTIONS", path, headers={**base, "Access-Control-Request-Method": "GET"})
    assert plain.status_code == 200 and "access-control-allow-methods" not in plain.headers


@pytest.mark.parametrize("api_name", ["mgmt", "edge"])
def test_cross_origin_replies_carry_cors_headers_errors_included(ziti_admin, api_name):
    send = getattr(ziti_admin, api_name)
    for path, status in (("/current-api-session", 200), ("/identities/nope", 404)):
        response = send("GET", path, headers={"Origin": ORIGIN})
        assert response.status_code == status, response.text
        assert response.headers["access-control-allow-origin"] == "*"
        assert response.headers["access-control-allow-credentials"] == "true"


def test_same_origin_requests_carry_no_cors_headers(ziti_admin):
    response = ziti_admin.mgmt("GET", "/current-api-session")
    assert response.status_code == 200 and "access-control-allow-origin" not in response.headers
