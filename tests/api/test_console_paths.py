"""Repeated and trailing slashes are cleaned before routing, as the real controller's router cleans them.

The Admin Console builds detail URLs as ``{prefix}/{type}/{id}/`` (an empty sub-resource), and hand-made
URLs often carry ``//``; both answer as their clean forms, for every method, with no redirect.
"""

from __future__ import annotations

import socket

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.api.middleware import clean_path

MGMT = "/edge/management/v1"


def raw_get(port: int, target: str, token: str) -> tuple[int, dict]:
    """One HTTP/1.1 GET with ``target`` sent byte for byte (an HTTP client library would rewrite ``//``)."""
    request = f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nzt-session: {token}\r\nConnection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(request.encode())
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    if b"transfer-encoding: chunked" in head.lower():
        body = _unchunk(body)
    return status, orjson.loads(body)


def _unchunk(body: bytes) -> bytes:
    out = b""
    while body:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        out, body = out + body[:size], body[size + 2 :]
    return out


@pytest.fixture
def served(ziti_app, ziti_http_server):
    holder, server = ziti_http_server
    holder.app = ziti_app
    return server


def test_the_consoles_detail_and_listing_urls_answer_as_their_clean_forms(served, ziti_admin, ziti_unique):
    service_id = ziti_admin.create("services", {"name": ziti_unique("svc"), "encryptionRequired": True})
    token = ziti_admin.token
    clean = ziti_admin.mgmt_ok("GET", f"/services/{service_id}")
    for target in (
        f"{MGMT}/services/{service_id}/",
        f"{MGMT}/services/{service_id}//",
        f"{MGMT}//services//{service_id}",
        f"//edge//management/v1/services/{service_id}///",
    ):
        status, body = raw_get(served.port, target, token)
        assert status == 200, (target, body)
        assert body["data"]["id"] == service_id and body["data"]["name"] == clean["name"]
    status, body = raw_get(served.port, f"{MGMT}//terminators", token)
    assert status == 200 and body["data"] == [] and body["meta"]["pagination"]["totalCount"] == 0
    status, body = raw_get(served.port, f"{MGMT}/services/{service_id}/configs/", token)
    assert status == 200 and body["data"] == []


def test_writes_on_unclean_paths_reach_the_same_operation(ziti_admin, ziti_unique):
    response = ziti_admin.request(
        "POST", f"{MGMT}/services//", json={"name": ziti_unique("svc"), "encryptionRequired": True}
    )
    assert response.status_code == 201
    service_id = response.json()["data"]["id"]
    assert (
        ziti_admin.request("PATCH", f"{MGMT}/services/{service_id}//", json={"roleAttributes": ["web"]}).status_code
        == 200
    )
    assert ziti_admin.mgmt_ok("GET", f"/services/{service_id}")["roleAttributes"] == ["web"]
    assert ziti_admin.request("DELETE", f"{MGMT}/services/{service_id}/").status_code == 200
    assert ziti_admin.mgmt("GET", f"/services/{service_id}").status_code == 404


def test_an_unknown_path_stays_a_404_in_the_envelope(served, ziti_admin):
    status, body = raw_get(served.port, f"{MGMT}//no-such-thing//", ziti_admin.token)
    assert status == 404 and body["error"]["code"] == "NOT_FOUND" and body["error"]["requestId"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["", "edge", "v1", "a.b", "%20"]), max_size=8), st.booleans())
def test_clean_path_is_idempotent_and_leaves_no_empty_segment(parts, trailing):
    path = "/" + "/".join(parts) + ("/" if trailing else "")
    cleaned = clean_path(path)
    assert clean_path(cleaned) == cleaned
    assert cleaned == "/" or (not cleaned.endswith("/") and "//" not in cleaned)
    assert [p for p in cleaned.split("/") if p] == [p for p in parts if p]
