"""A single-page app served from a folder at /zac/ (``Config.console_dir``, ``--console DIR``).

Requests go over a real socket with the request target sent byte for byte, so dot segments and
``%2e%2e`` reach the server as an attacker would send them (an HTTP library would remove them first).
"""

from __future__ import annotations

import os
import socket

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.app import create_app
from controller.config import Config

INDEX = b"<!doctype html><html><head><base href='/zac/'></head><body><app-root></app-root></body></html>"
ASSET = b"console.log('zac');"
SECRET = b"the data folder's secret"


def raw(port: int, target: str, method: str = "GET", headers: dict | None = None) -> tuple[int, dict, bytes]:
    """One HTTP/1.1 request; returns (status, lower-case headers, body)."""
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parsed = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        parsed[name.strip().lower()] = value.strip()
    if parsed.get("transfer-encoding") == "chunked":
        out = b""
        while body:
            size, _, body = body.partition(b"\r\n")
            if int(size, 16) == 0:
                break
            out, body = out + body[: int(size, 16)], body[int(size, 16) + 2 :]
        body = out
    return int(status_line.split(" ")[1]), parsed, body


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    base = tmp_path_factory.mktemp("spa")
    (base / "secret.txt").write_bytes(SECRET)
    root = base / "zac"
    (root / "assets").mkdir(parents=True)
    (root / "index.html").write_bytes(INDEX)
    (root / "main-4CFX2RAM.js").write_bytes(ASSET)
    (root / "favicon.ico").write_bytes(b"\x00\x00\x01\x00")
    (root / "assets" / "logo.svg").write_bytes(b"<svg xmlns='http://www.w3.org/2000/svg'/>")
    (root / ".env").write_bytes(SECRET)
    os.symlink(base / "secret.txt", root / "escape.txt")
    return root


@pytest.fixture
def port(folder, ziti_http_server):
    holder, server = ziti_http_server
    app = create_app(Config(console_dir=folder))
    holder.app = app
    yield server.port
    app.controller.close()


def test_index_is_served_at_the_prefix_and_never_cached(port):
    for target in ("/zac/", "/zac", "/zac/index.html", "/zac//"):
        status, headers, body = raw(port, target)
        assert status == 200 and body == INDEX, target
        assert headers["content-type"] == "text/html; charset=utf-8" and headers["cache-control"] == "no-cache"


def test_fingerprinted_assets_are_immutable_others_revalidate(port):
    status, headers, body = raw(port, "/zac/main-4CFX2RAM.js")
    assert status == 200 and body == ASSET and headers["content-type"].startswith("text/javascript")
    assert headers["cache-control"] == "public, max-age=31536000, immutable"
    assert headers["x-content-type-options"] == "nosniff"
    status, headers, body = raw(port, "/zac/assets/logo.svg")
    assert status == 200 and headers["content-type"] == "image/svg+xml" and headers["cache-control"] == "no-cache"
    status, headers, _ = raw(port, "/zac/favicon.ico")
    assert status == 200 and headers["content-type"] == "image/x-icon"


def test_unknown_paths_and_folders_fall_back_to_the_index_never_a_listing(port):
    for target in ("/zac/identities/2-XpH.ls2", "/zac/dashboard", "/zac/assets", "/zac/assets/", "/zac/callback"):
        status, headers, body = raw(port, target)
        assert status == 200 and body == INDEX and headers["cache-control"] == "no-cache", target


@pytest.mark.parametrize(
    "target",
    [
        "/zac/../secret.txt",
        "/zac/%2e%2e/secret.txt",
        "/zac/%2E%2E/secret.txt",
        "/zac/assets/..%2f..%2fsecret.txt",
        "/zac/assets/%2e%2e/%2e%2e/secret.txt",
        "/zac/./index.html",
        "/zac/.env",
        "/zac/escape.txt",
        "/zac/..%5c..%5csecret.txt",
    ],
)
def test_traversal_hidden_files_and_links_out_are_404s_in_the_envelope(port, target):
    status, headers, body = raw(port, target)
    assert status == 404, target
    assert headers["content-type"] == "application/json"
    error = orjson.loads(body)["error"]
    assert error["code"] == "NOT_FOUND" and error["requestId"]
    assert SECRET not in body


def test_head_answers_the_headers_of_get_without_a_body(port):
    status, headers, body = raw(port, "/zac/main-4CFX2RAM.js", method="HEAD")
    assert status == 200 and body == b"" and int(headers["content-length"]) == len(ASSET)
    assert headers["cache-control"] == "public, max-age=31536000, immutable"


def test_an_etag_answers_a_revalidation_with_304(port):
    _, headers, _ = raw(port, "/zac/")
    status, _, body = raw(port, "/zac/", headers={"If-None-Match": headers["etag"]})
    assert status == 304 and body == b""


def test_writes_are_refused_with_405_in_the_envelope(port):
    status, headers, body = raw(port, "/zac/index.html", method="DELETE")
    assert status == 405 and orjson.loads(body)["error"]["code"] == "METHOD_NOT_ALLOWED"
    assert "GET" in headers["allow"]


def test_the_apis_are_untouched_beside_the_app(port):
    status, _, body = raw(port, "/edge/management/v1/version")
    assert status == 200 and orjson.loads(body)["data"]["apiVersions"]["edge-management"]


def test_without_a_folder_nothing_is_served_at_zac(ziti_app, ziti_http_server):
    holder, server = ziti_http_server
    holder.app = ziti_app
    status, _, body = raw(server.port, "/zac/")
    assert status == 404 and orjson.loads(body)["error"]["code"] == "NOT_FOUND"


def test_a_folder_without_an_index_is_refused(tmp_path):
    with pytest.raises(ValueError, match="index.html"):
        create_app(Config(console_dir=tmp_path))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(["..", ".", "%2e%2e", "%2e", "assets", "secret.txt", "zac", "%2f", ""]), max_size=6))
def test_no_path_reaches_a_file_outside_the_folder(port, parts):
    status, _, body = raw(port, "/zac/" + "/".join(parts))
    assert status in (200, 404) and SECRET not in body
