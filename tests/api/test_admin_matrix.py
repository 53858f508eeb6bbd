"""Admin access as a matrix over every route, kept in step with the route table."""
from __future__ import annotations

import re

import pytest

from controller.api.operations import ADMIN, CLIENT, MANAGEMENT, PARTIAL, PREFIXES, PUBLIC, SESSION
from controller.api.routes import build_route_table
from tests.api.test_conventions import assert_error

ROUTES = build_route_table()


def concrete(path: str) -> str:
    return re.sub(r"{\w+}", "some-id", path)


def routes(api: str, levels: tuple[str, ...]):
    return [pytest.param(op, id=f"{op.method} {op.path}") for op in ROUTES.for_api(api) if op.auth in levels]


def send(api_client, op, api=MANAGEMENT, headers=None):
    return api_client.request(op.method, PREFIXES[api] + concrete(op.path), json={} if op.method != "GET" else None,
                              headers=headers or {})


@pytest.fixture
def non_admin(api, make_identity):
    make_identity(password="plain-pass", username="plainuser")
    return api.login("plainuser", "plain-pass")


@pytest.mark.parametrize("op", routes(MANAGEMENT, (ADMIN, SESSION, PARTIAL)))
def test_no_session_is_401(api, op):
    assert_error(send(api, op), 401, "UNAUTHORIZED")


@pytest.mark.parametrize("op", routes(MANAGEMENT, (ADMIN, SESSION, PARTIAL)))
def test_unknown_token_is_401(api, op):
    assert_error(send(api, op, headers={"zt-session": "4b1f0c55-0000-4000-8000-000000000000"}), 401, "UNAUTHORIZED")


@pytest.mark.parametrize("op", routes(MANAGEMENT, (ADMIN,)))
def test_non_admin_session_is_401(non_admin, op):
    assert_error(send(non_admin, op), 401, "UNAUTHORIZED")


@pytest.mark.parametrize("op", routes(MANAGEMENT, (ADMIN,)))
def test_expired_admin_session_is_401(admin, ziti_clock, op):
    ziti_clock.advance(minutes=31)
    assert_error(send(admin, op), 401, "UNAUTHORIZED")


@pytest.mark.parametrize("op", routes(MANAGEMENT, (ADMIN,)))
def test_admin_session_is_never_401(admin, op):
    response = send(admin, op)
    assert response.status_code != 401, response.text
    assert response.status_code < 500, response.text


@pytest.mark.parametrize("op", routes(MANAGEMENT, (SESSION,)))
def test_non_admin_reaches_session_operations(non_admin, op):
    response = send(non_admin, op)
    assert response.status_code != 401 and response.status_code < 500, response.text


PUBLIC_ROUTES = [pytest.param(name, op, id=f"{name} {op.method} {op.path}")
                 for name in (MANAGEMENT, CLIENT) for op in ROUTES.for_api(name) if op.auth == PUBLIC]


@pytest.mark.parametrize("api_name, op", PUBLIC_ROUTES)
def test_public_operations_need_no_session(api, api_name, op):
    response = send(api, op, api=api_name)
    assert response.status_code != 401, response.text
    assert response.status_code < 500, response.text
