"""The idle-session sweep: sessions idle past the timeout go, active ones stay."""

from __future__ import annotations

import pytest

from harness.client import ZitiClient


@pytest.fixture
def connect(ziti_app, ziti_mode, request):
    clients = []
    if ziti_mode == "inprocess":
        make = lambda: ZitiClient.in_process(ziti_app)  # noqa: E731
    else:
        holder, server = request.getfixturevalue("ziti_http_server")
        holder.app = ziti_app
        make = lambda: ZitiClient.connect(server.url)  # noqa: E731
    yield lambda: clients.append(make()) or clients[-1]
    for client in clients:
        client.close()


def session_ids(ziti_admin, identity_id: str) -> set[str]:
    found = ziti_admin.management.iterate("listAPISessions", filter=f'identity = "{identity_id}"')
    return {session["id"] for session in found}


def test_sweep_removes_idle_sessions_and_keeps_recently_active_ones(connect, ziti_clock, ziti_unique):
    ziti_admin = connect()
    ziti_admin.login("admin", "admin")
    username = ziti_unique("sweep-user")
    user = ziti_admin.management.create_identity(body={"name": ziti_unique("sweep"), "type": "User", "isAdmin": False})
    ziti_admin.management.create_authenticator(
        body={"identityId": user["id"], "method": "updb", "username": username, "password": "pw-sweep-1"}
    )
    idle, active = connect(), connect()
    idle.login(username, "pw-sweep-1", api="client")
    active_id = active.login(username, "pw-sweep-1", api="client")["id"]

    ziti_clock.advance(minutes=20)
    active.edge.call("getCurrentAPISession")  # activity cached in memory, not yet flushed to the store
    ziti_clock.advance(minutes=15)  # idle: 35 min > 30; active: 15 min

    assert session_ids(ziti_admin, user["id"]) == {active_id}
    ziti_clock.advance(minutes=20)  # active is now idle for 35 min too
    assert session_ids(ziti_admin, user["id"]) == set()
