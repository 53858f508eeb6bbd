"""TLSServer over real TLS on 127.0.0.1: the app sees exactly the chain the client sent."""

from __future__ import annotations

import base64
import http.client
import json
import socket
import ssl

import httpx
import pytest
from cryptography.hazmat.primitives import serialization

from controller.pki import ControllerPKI, fingerprint
from controller.server.tls import PEER_CERTS_KEY, TLSServer
from harness.client import pki as hp


def echo_app(environ, start_response):
    """Reply with the fingerprints of the TLS peer chain and the client port."""
    peers = environ[PEER_CERTS_KEY]
    body = json.dumps(
        {
            "fingerprints": [fingerprint(cert) for cert in peers],
            "remotePort": environ.get("REMOTE_PORT"),
            "scheme": environ.get("wsgi.url_scheme"),
            "body": environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)).decode(),
        }
    ).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return ControllerPKI.load_or_create(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def server(pki):
    srv = TLSServer(echo_app, "127.0.0.1", 0, pki, threads=4)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def third_party():
    root = hp.make_root_ca("Unknown Third Party Root")
    inter = hp.make_intermediate_ca(root, "Unknown Third Party Intermediate")
    return root, inter


def _url(server, path="/echo"):
    return f"https://127.0.0.1:{server.port}{path}"


def _get(server, pki, client=None, **kwargs):
    ctx = hp.client_ssl_context(pki.ca_bundle_pem(), client)
    with httpx.Client(verify=ctx, timeout=10) as http:
        response = http.get(_url(server), **kwargs)
    assert response.status_code == 200
    return response.json()


def test_port_is_assigned(server):
    assert server.port > 0


def test_no_client_cert_gives_empty_chain(server, pki):
    data = _get(server, pki)
    assert data["fingerprints"] == []
    assert data["scheme"] == "https"


def test_unknown_ca_with_intermediate_reaches_app(server, pki, third_party):
    root, inter = third_party
    leaf = hp.make_leaf(inter, "tp-client")
    data = _get(server, pki, leaf)
    assert data["fingerprints"] == [leaf.fingerprint, hp.sha1_fingerprint(inter.cert)]


def test_self_signed_client_cert_reaches_app(server, pki):
    lone = hp.make_leaf(None, "lonely")
    assert _get(server, pki, lone)["fingerprints"] == [lone.fingerprint]


def test_expired_client_cert_reaches_app(server, pki, third_party):
    leaf = hp.make_leaf(third_party[1], "old", expired=True)
    assert _get(server, pki, leaf)["fingerprints"][0] == leaf.fingerprint


@pytest.mark.parametrize("key_type", ["rsa", "ec", "ec384"])
def test_client_key_types(server, pki, third_party, key_type):
    leaf = hp.make_leaf(third_party[1], f"client-{key_type}", key_type=key_type)
    assert _get(server, pki, leaf)["fingerprints"][0] == leaf.fingerprint


def test_rsa_third_party_ca(server, pki):
    root = hp.make_root_ca("RSA root", key_type="rsa")
    inter = hp.make_intermediate_ca(root, "RSA inter", key_type="rsa")
    leaf = hp.make_leaf(inter, "rsa-leaf", key_type="rsa")
    assert _get(server, pki, leaf)["fingerprints"] == [leaf.fingerprint, hp.sha1_fingerprint(inter.cert)]


def test_controller_issued_cert_with_its_chain(server, pki):
    csr, key = hp.make_csr("sdk")
    cert = pki.sign_identity_csr(csr, "identity-1")
    client = hp.CertKey(cert, key, [pki.intermediate_cert])
    assert _get(server, pki, client)["fingerprints"] == [fingerprint(cert), fingerprint(pki.intermediate_cert)]


def test_keep_alive_reuses_one_connection_and_chain(server, pki, third_party):
    leaf = hp.make_leaf(third_party[1], "keepalive")
    ctx = hp.client_ssl_context(pki.ca_bundle_pem(), leaf)
    with httpx.Client(verify=ctx, timeout=10) as http:
        replies = [http.post(_url(server), content=f"request {i}").json() for i in range(5)]
    assert len({r["remotePort"] for r in replies}) == 1
    assert [r["body"] for r in replies] == [f"request {i}" for i in range(5)]
    assert all(r["fingerprints"][0] == leaf.fingerprint for r in replies)


def test_keep_alive_with_http_client_and_large_body(server, pki, third_party):
    leaf = hp.make_leaf(third_party[1], "big")
    ctx = hp.client_ssl_context(pki.ca_bundle_pem(), leaf)
    conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=ctx, timeout=10)
    try:
        ports = set()
        for size in (10, 70_000, 5):
            conn.request("POST", "/echo", body=b"x" * size, headers={"Content-Type": "text/plain"})
            data = json.loads(conn.getresponse().read())
            assert len(data["body"]) == size and data["fingerprints"][0] == leaf.fingerprint
            ports.add(data["remotePort"])
        assert len(ports) == 1
    finally:
        conn.close()


def test_spoofed_headers_do_not_inject_certs(server, pki, third_party):
    fake = hp.make_leaf(third_party[1], "fake")
    der_b64 = base64.b64encode(fake.cert.public_bytes(serialization.Encoding.DER)).decode()
    headers = {
        "controller.peer_certs": fake.cert_pem.strip().replace("\n", " "),
        "controller-peer-certs": der_b64,
        "X-Client-CertPem": der_b64,
        "X-Edge-Router-Proxy-Request": "true",
    }
    assert _get(server, pki, headers=headers)["fingerprints"] == []
    real = hp.make_leaf(third_party[1], "real")
    assert _get(server, pki, real, headers=headers)["fingerprints"][0] == real.fingerprint


def test_tls12_client_cert(server, pki, third_party):
    leaf = hp.make_leaf(third_party[1], "tls12", key_type="rsa")
    ctx = hp.client_ssl_context(pki.ca_bundle_pem(), leaf)
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    with httpx.Client(verify=ctx, timeout=10) as http:
        data = http.get(_url(server)).json()
    assert data["fingerprints"] == [leaf.fingerprint, hp.sha1_fingerprint(third_party[1].cert)]


def test_server_sends_intermediate_so_root_alone_suffices(server, pki):
    ctx = hp.client_ssl_context(hp.cert_pem(pki.root_cert))
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
            assert tls.version() in ("TLSv1.2", "TLSv1.3")
            assert tls.getpeercert()["subject"]


def test_untrusting_client_fails_but_server_survives(server, pki):
    stranger = hp.client_ssl_context(hp.cert_pem(hp.make_root_ca().cert))
    with pytest.raises(httpx.ConnectError):
        with httpx.Client(verify=stranger, timeout=10) as http:
            http.get(_url(server))
    assert _get(server, pki)["fingerprints"] == []


def test_plain_http_is_not_served_and_server_survives(server, pki):
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
        raw.sendall(b"GET /echo HTTP/1.1\r\nHost: x\r\n\r\n")
        raw.settimeout(5)
        try:
            reply = raw.recv(4096)
        except (ConnectionResetError, socket.timeout):
            reply = b""
    assert b"controller.peer_certs" not in reply and b"fingerprints" not in reply
    assert _get(server, pki)["fingerprints"] == []


def test_concurrent_clients(server, pki, third_party):
    import concurrent.futures

    leaves = [hp.make_leaf(third_party[1], f"c{i}") for i in range(6)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(lambda leaf: _get(server, pki, leaf)["fingerprints"][0], leaves, timeout=60))
    assert results == [leaf.fingerprint for leaf in leaves]


def test_start_stop_restart_on_fresh_port(pki):
    srv = TLSServer(echo_app, "127.0.0.1", 0, pki, threads=2).start()
    try:
        assert _get(srv, pki)["fingerprints"] == []
    finally:
        srv.stop()
    srv.stop()  # idempotent
    with pytest.raises(httpx.ConnectError):
        with httpx.Client(verify=hp.client_ssl_context(pki.ca_bundle_pem()), timeout=5) as http:
            http.get(_url(srv))


def test_stop_with_idle_keep_alive_connection_is_prompt(pki):
    import time

    srv = TLSServer(echo_app, "127.0.0.1", 0, pki, threads=2).start()
    http = httpx.Client(verify=hp.client_ssl_context(pki.ca_bundle_pem()), timeout=5)
    try:
        assert http.get(_url(srv)).status_code == 200
        started = time.monotonic()
        srv.stop()
        assert time.monotonic() - started < 5
    finally:
        http.close()
        srv.stop()


def test_each_request_gets_its_own_parsed_copy_of_the_connections_chain(pki, third_party):
    """The connection keeps the chain as DER: what a request reads from its certificates is not kept with it."""
    seen: list = []

    def keeping_app(environ, start_response):
        seen.append(environ[PEER_CERTS_KEY])
        start_response("200 OK", [("Content-Length", "2")])
        return [b"ok"]

    leaf = hp.make_leaf(third_party[1], "copies")
    with TLSServer(keeping_app, "127.0.0.1", 0, pki, threads=1) as srv:
        ctx = hp.client_ssl_context(pki.ca_bundle_pem(), leaf)
        with httpx.Client(verify=ctx, timeout=10) as http:
            assert [http.get(_url(srv)).text for _ in range(2)] == ["ok", "ok"]
    first, second = seen
    assert (
        [fingerprint(c) for c in first]
        == [fingerprint(c) for c in second]
        == [leaf.fingerprint, hp.sha1_fingerprint(third_party[1].cert)]
    )
    assert first[0] is not second[0] and first[1] is not second[1]


def sized_app(environ, start_response):
    """Answer ``/size/N`` with N bytes and the client leaf's fingerprint in a header."""
    size = int(environ["PATH_INFO"].rsplit("/", 1)[1])
    environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    peers = environ[PEER_CERTS_KEY]
    headers = [("Content-Length", str(size)), ("X-Leaf", fingerprint(peers[0]) if peers else "")]
    start_response("200 OK", headers)
    return [b"z" * size]


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_keep_alive_connection_carries_on_after_large_answers_and_bodies(pki, third_party, version):
    """Between requests the TLS memory buffers are given back; the connection's next records still flow."""
    leaf = hp.make_leaf(third_party[1], "sizes")
    ctx = hp.client_ssl_context(pki.ca_bundle_pem(), leaf)
    ctx.maximum_version = version
    with TLSServer(sized_app, "127.0.0.1", 0, pki, threads=2) as srv:
        conn = http.client.HTTPSConnection("127.0.0.1", srv.port, context=ctx, timeout=10)
        try:
            for answer, body in ((300_000, 0), (10, 0), (5, 100_000), (70_000, 70_000), (1, 0)):
                conn.request("POST", f"/size/{answer}", body=b"b" * body)
                response = conn.getresponse()
                assert response.read() == b"z" * answer
                assert response.getheader("X-Leaf") == leaf.fingerprint
            assert conn.sock.version() == ("TLSv1.3" if version == ssl.TLSVersion.TLSv1_3 else "TLSv1.2")
        finally:
            conn.close()
