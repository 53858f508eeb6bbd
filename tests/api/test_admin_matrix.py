"""Admin access as a matrix over every real management operation (fixtures/operations/reference.json).

Expectations come from the reference table of the real controller, not from our
route table, so a route declared with the wrong level fails here. The matrix
only reads (every request is refused, or names an id that does not exist), so
one controller per mode serves every item; sessions are logged in once and
again only when a request of the matrix ended them (logout, clock moved).
"""

from __future__ import annotations

import re

import pytest

from controller.app import create_app
from controller.clock import FrozenClock
from controller.config import Config
from harness.client import ZitiClient
from harness.client.transport import inprocess, over_http
from tests.api.reference_operations import REFERENCE
from tests.support import assert_error

PREFIXES = {"client": "/edge/client/v1", "management": "/edge/management/v1"}
ADMIN = ("admin", "admin")
NON_ADMIN = ("matrix-user", "matrix-pass")


def concrete(path: str) -> str:
    return re.sub(r"{\w+}", "some-id", path)


def operations(api: str, levels: tuple[str, ...]):
    return [
        pytest.param(row, id=f"{row['method']} {row['path']}")
        for row in REFERENCE
        if row["api"] == api and row["auth"] in levels
    ]


class Matrix:
    """One controller and its clients, shared by the matrix's items in one mode."""

    def __init__(self, mode: str, http_server=None):
        self.clock = FrozenClock("2025-06-01T12:00:00Z")
        self.app = create_app(Config(), clock=self.clock)
        self.holder = http_server[0] if http_server else None
        self.http = inprocess(self.app) if mode == "inprocess" else over_http(http_server[1].url)
        self.api = ZitiClient(self.http)
        self._sessions: dict[str, ZitiClient] = {}
        self._non_admin_created = False

    def mount(self) -> "Matrix":
        if self.holder is not None:
            self.holder.app = self.app
        return self

    def send(self, client: ZitiClient, row: dict, headers: dict | None = None):
        path = PREFIXES[row["api"]] + concrete(row["path"])
        body = {} if row["method"] != "GET" else None
        return client.request(row["method"], path, json=body, headers=headers or {})

    def session(self, kind: str) -> ZitiClient:
        """A live session of ``admin`` or ``non-admin`` (logged in again if a request ended it)."""
        cached = self._sessions.get(kind)
        if cached is not None and cached.mgmt("GET", "/current-api-session").status_code == 200:
            return cached
        if kind == "non-admin" and not self._non_admin_created:
            ziti_admin = self.session("admin")
            identity_id = ziti_admin.create("identities", {"name": "matrix-user", "type": "User", "isAdmin": False})
            ziti_admin.create(
                "authenticators",
                {"identityId": identity_id, "method": "updb", "username": NON_ADMIN[0], "password": NON_ADMIN[1]},
            )
            self._non_admin_created = True
        self._sessions[kind] = self.api.signed_in(*(ADMIN if kind == "admin" else NON_ADMIN))
        return self._sessions[kind]

    def expired_admin(self) -> ZitiClient:
        """An admin session left idle past its timeout (the clock moves once; live sessions log in again)."""
        if "expired" not in self._sessions:
            self._sessions["expired"] = self.api.signed_in(*ADMIN)
            self.clock.advance(minutes=31)
        return self._sessions["expired"]

    def close(self) -> None:
        self.http.close()
        self.app.controller.close()


@pytest.fixture(scope="module", params=["inprocess", "http"])
def shared(request):
    chosen = request.config.getoption("controller_mode")
    if request.config.getoption("controller_url"):
        pytest.skip("the matrix needs an in-process controller (its clock)")
    if chosen not in ("both", request.param):
        pytest.skip(f"--controller-mode={chosen}")
    server = request.getfixturevalue("ziti_http_server") if request.param == "http" else None
    matrix = Matrix(request.param, server)
    yield matrix
    matrix.close()


@pytest.fixture
def matrix(shared):
    return shared.mount()


@pytest.mark.parametrize("row", operations("management", ("admin", "session")))
def test_no_session_is_401(matrix, row):
    assert_error(matrix.send(matrix.api, row), 401, "UNAUTHORIZED")


@pytest.mark.parametrize("row", operations("management", ("admin", "session")))
def test_unknown_token_is_401(matrix, row):
    response = matrix.send(matrix.api, row, headers={"zt-session": "4b1f0c55-0000-4000-8000-000000000000"})
    assert_error(response, 401, "UNAUTHORIZED")


@pytest.mark.parametrize("row", operations("management", ("admin",)))
def test_non_admin_session_is_401(matrix, row):
    assert_error(matrix.send(matrix.session("non-admin"), row), 401, "UNAUTHORIZED")


@pytest.mark.parametrize("row", operations("management", ("admin",)))
def test_expired_admin_session_is_401(matrix, row):
    assert_error(matrix.send(matrix.expired_admin(), row), 401, "UNAUTHORIZED")


@pytest.mark.parametrize("row", operations("management", ("admin",)))
def test_admin_session_is_never_401(matrix, row):
    response = matrix.send(matrix.session("admin"), row)
    assert response.status_code != 401, response.text
    assert response.status_code < 500, response.text


@pytest.mark.parametrize("row", operations("management", ("session",)))
def test_non_admin_reaches_session_operations(matrix, row):
    response = matrix.send(matrix.session("non-admin"), row)
    assert response.status_code != 401 and response.status_code < 500, response.text


@pytest.mark.parametrize("row", operations("management", ("public",)) + operations("client", ("public",)))
def test_public_operations_need_no_session(matrix, row):
    response = matrix.send(matrix.api, row)
    assert response.status_code != 401, response.text
    assert response.status_code < 500, response.text
