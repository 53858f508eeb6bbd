"""The importEntities extension and the fast apply built on it."""

from __future__ import annotations

import socket
import threading

import orjson
import pytest

from controller.config import Config
from harness.client import ApiError
from harness.network import Network, apply, export
from harness.network.check import ApplyInterrupted


@pytest.fixture
def ziti_config():
    return Config(simulation=True)  # faults stand in for a controller without the extension


def small_network(prefix: str) -> dict:
    return {
        "services": [{"name": f"{prefix}-svc", "roleAttributes": ["web"]}],
        "identities": [
            {"name": f"{prefix}-alice", "roleAttributes": ["sales"], "password": "pw-alice-1"},
            {"name": f"{prefix}-bob"},
        ],
        "servicePolicies": [
            {
                "name": f"{prefix}-dial",
                "type": "Dial",
                "semantic": "AnyOf",
                "identityRoles": ["#sales", f"@{prefix}-bob"],
                "serviceRoles": ["#web"],
            }
        ],
    }


def names(client, op: str, prefix: str) -> set[str]:
    return {r["name"] for r in client.management.iterate(op, filter=f'name contains "{prefix}"')}


def test_import_creates_entities_that_refer_to_each_other(ziti_admin, ziti_unique):
    prefix = ziti_unique("imp")
    reply = ziti_admin.management.call(
        "importEntities",
        body={
            "items": [
                {
                    "op": "createIdentity",
                    "ref": "bob",
                    "body": {"name": f"{prefix}-bob", "type": "User", "isAdmin": False},
                },
                {
                    "op": "createServicePolicy",
                    "ref": "dial",
                    "body": {
                        "name": f"{prefix}-dial",
                        "type": "Dial",
                        "semantic": "AnyOf",
                        "identityRoles": [{"$ref": "bob", "prefix": "@"}],
                        "serviceRoles": ["#all"],
                    },
                },
            ]
        },
    )

    policy = ziti_admin.management.detail_service_policy(reply["created"]["dial"])
    assert policy["identityRoles"] == ["@" + reply["created"]["bob"]] and reply["count"] == 2


@pytest.mark.parametrize(
    "op, body, field",
    [
        ("createIdentity", {"name": "{p}-x", "type": "Robot", "isAdmin": False}, "type"),
        ("createIdentity", {"type": "User", "isAdmin": False}, "name"),
        ("createService", {"name": "{p}-taken", "encryptionRequired": True}, "name"),
        (
            "createServicePolicy",
            {"name": "{p}-p", "type": "Dial", "semantic": "AnyOf", "identityRoles": ["@missing"]},
            "identityRoles",
        ),
    ],
)
def test_a_bad_item_fails_the_whole_import_exactly_as_its_own_create_does(ziti_admin, ziti_unique, op, body, field):
    prefix = ziti_unique("bad")
    ziti_admin.management.create_service(body={"name": f"{prefix}-taken", "encryptionRequired": True})
    body = {key: value.replace("{p}", prefix) if isinstance(value, str) else value for key, value in body.items()}
    with pytest.raises(ApiError) as alone:
        ziti_admin.management.call(op, body=body)

    with pytest.raises(ApiError) as imported:
        ziti_admin.management.call(
            "importEntities",
            body={
                "items": [
                    {"op": "createService", "body": {"name": f"{prefix}-first", "encryptionRequired": True}},
                    {"op": op, "body": body},
                ]
            },
        )

    error, expected = imported.value, alone.value
    assert (error.status, error.code) == (expected.status, expected.code) == (400, "COULD_NOT_VALIDATE")
    assert error.cause["field"] == f"items.1.body.{expected.cause['field']}" and expected.cause["field"].startswith(
        field
    )
    assert error.cause["reason"] == expected.cause["reason"]
    assert names(ziti_admin, "listServices", prefix) == {f"{prefix}-taken"}  # the first item was undone


def test_import_refuses_unknown_operations_references_and_non_admins(ziti_admin, ziti, ziti_unique):
    with pytest.raises(ApiError) as caught:
        ziti_admin.management.call("importEntities", body={"items": [{"op": "deleteIdentity", "body": {}}]})
    assert caught.value.status == 400 and caught.value.cause["field"] == "items.0.op"
    with pytest.raises(ApiError) as caught:
        ziti_admin.management.call(
            "importEntities",
            body={
                "items": [
                    {
                        "op": "createServicePolicy",
                        "body": {
                            "name": ziti_unique("p"),
                            "type": "Dial",
                            "identityRoles": [{"$ref": "later", "prefix": "@"}],
                        },
                    }
                ]
            },
        )
    assert caught.value.status == 400 and caught.value.cause["field"] == "items.0.body.$ref"
    ziti_admin.logout()
    with pytest.raises(ApiError) as caught:
        ziti.management.call("importEntities", body={"items": []})
    assert caught.value.status == 401


def test_apply_uses_the_import_and_reads_back_the_same_network(ziti_admin, ziti_unique):
    prefix = ziti_unique("net")
    steps = apply(ziti_admin, small_network(prefix))

    assert sorted(step.action for step in steps) == ["create"] * 4
    exported = export(ziti_admin).to_dict()
    policy = next(p for p in exported["servicePolicies"] if p["name"] == f"{prefix}-dial")
    assert sorted(policy["identityRoles"]) == sorted(["#sales", f"@{prefix}-bob"])
    ziti_admin.login(f"{prefix}-alice", "pw-alice-1")  # the password shorthand made its authenticator


def test_apply_leaves_no_thread_behind_whether_the_import_succeeds_or_fails(ziti_admin, ziti_unique):
    # a worker still ending when the command line exits made a successful apply exit 1 (a stuck listener's path)
    def import_threads():
        return [t.name for t in threading.enumerate() if t.name.startswith("import")]

    apply(ziti_admin, small_network(ziti_unique("ok")))
    assert import_threads() == []
    ziti_admin.management.call("createSimulationFault", body={"path": "/imports$", "status": 503, "count": 1})
    with pytest.raises(ApplyInterrupted, match="then ApiError: 503"):
        apply(ziti_admin, small_network(ziti_unique("failed")))
    assert import_threads() == []


def test_apply_falls_back_to_concurrent_requests_without_the_extension(ziti_admin, ziti_unique):
    ziti_admin.management.call("createSimulationFault", body={"path": "/imports", "status": 404})
    prefix = ziti_unique("noext")
    apply(ziti_admin, small_network(prefix))

    assert names(ziti_admin, "listIdentities", prefix) == {f"{prefix}-alice", f"{prefix}-bob"}
    policy = next(ziti_admin.management.iterate("listServicePolicies", filter=f'name = "{prefix}-dial"'))
    bob = next(ziti_admin.management.iterate("listIdentities", filter=f'name = "{prefix}-bob"'))
    assert f"@{bob['id']}" in policy["identityRoles"]
    assert apply(ziti_admin, Network.from_dict(small_network(prefix))) == []  # already in step


def test_an_import_body_past_the_limit_of_other_requests_goes_through(ziti_admin, ziti_unique):
    prefix = ziti_unique("big")
    body = orjson.dumps(
        {
            "items": [
                {"op": "createService", "ref": "svc", "body": {"name": f"{prefix}-svc", "encryptionRequired": True}}
            ]
        }
    )
    padded = body + b" " * (3 << 20)  # past the 2 MB any other request may send
    reply = ziti_admin.request(
        "POST", "/edge/management/v1/imports", content=padded, headers={"Content-Type": "application/json"}
    )
    assert reply.status_code == 200, reply.text
    assert names(ziti_admin, "listServices", prefix) == {f"{prefix}-svc"}


def test_only_an_admin_session_may_send_an_import_body_past_the_usual_limit(ziti_admin, ziti_mode, ziti_unique):
    if ziti_mode != "http":
        pytest.skip("the listener's limit: no listener in-process")
    name = ziti_unique("not-admin")
    identity_id = ziti_admin.create("identities", {"name": name, "type": "User", "isAdmin": False})
    ziti_admin.create(
        "authenticators", {"identityId": identity_id, "method": "updb", "username": name, "password": "pw-12345"}
    )
    user = ziti_admin.signed_in(name, "pw-12345", api="client")
    url = ziti_admin.raw.base_url

    def first_line(token: str | None) -> bytes:
        """Announce a 3 MB import and wait: a granted body is asked for (100 Continue), a refused one answered."""
        head = (
            f"POST /edge/management/v1/imports HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {3 << 20}\r\nExpect: 100-continue\r\n"
            + (f"zt-session: {token}\r\n" if token else "")
            + "\r\n"
        )
        with socket.create_connection((url.host, url.port), timeout=10) as conn:
            conn.sendall(head.encode())
            return conn.recv(4096).split(b"\r\n", 1)[0]

    assert first_line(ziti_admin.token) == b"HTTP/1.1 100 Continue"
    for token in (user.token, "not-a-session", None):
        assert first_line(token) == b"HTTP/1.1 401 Unauthorized"  # answered before a byte of the body is read


def test_a_body_past_the_limit_elsewhere_is_refused_with_413(ziti_admin, ziti_mode, ziti_unique):
    if ziti_mode != "http":
        pytest.skip("the listener's limit: no listener in-process")
    body = orjson.dumps({"name": ziti_unique("big")}) + b" " * (3 << 20)
    reply = ziti_admin.request(
        "POST", "/edge/management/v1/services", content=body, headers={"Content-Type": "application/json"}
    )
    assert reply.status_code == 413
    assert reply.json()["error"]["code"] == "REQUEST_ENTITY_TOO_LARGE"
