"""TLS policy (Mozilla "intermediate"): TLS 1.2 with ECDHE + AEAD suites only, and TLS 1.3, on both listeners."""

from __future__ import annotations

import socket
import ssl
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import router.tls_policy
from controller.pki import ControllerPKI
from controller.server import tls
from controller.server.tls import TLSServer
from harness.dataplane.sync import load_identity_file

#: ECDHE with CBC: Python's own server defaults (the router's before) still offered these
CBC_SHA2 = "ECDHE-RSA-AES128-SHA256"
#: suites OpenSSL's defaults offered before: static RSA key exchange, CBC with SHA-1 or SHA-2 MACs
REFUSED = ["AES128-SHA", "AES256-SHA", "AES128-GCM-SHA256", "AES256-SHA256", "ECDHE-RSA-AES128-SHA", CBC_SHA2]
MODERN_TLS12 = ["ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-CHACHA20-POLY1305"]


def hello_app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "5")])
    return [b"hello"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    pki = ControllerPKI.load_or_create(tmp_path_factory.mktemp("pki"))
    with TLSServer(hello_app, "127.0.0.1", 0, pki, threads=2) as srv:
        yield srv


def client_context(cipher: str | None, version: ssl.TLSVersion) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    context.minimum_version = context.maximum_version = version
    if cipher is not None:
        context.set_ciphers(cipher + ":@SECLEVEL=0")
    return context


def handshake(port: int, context: ssl.SSLContext) -> tuple[str, str]:
    """(TLS version, cipher) of a completed handshake; raises ssl.SSLError when the server refuses."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as conn:
            name, version, _bits = conn.cipher()
            conn.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            answer = conn.recv(4096)
            assert answer.startswith(b"HTTP/1.1 200"), answer
            return version, name


@pytest.mark.parametrize("cipher", REFUSED)
def test_https_refuses_static_rsa_and_cbc_suites(server, cipher):
    with pytest.raises(ssl.SSLError, match="HANDSHAKE_FAILURE|NO_SHARED_CIPHER|handshake failure"):
        handshake(server.port, client_context(cipher, ssl.TLSVersion.TLSv1_2))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_https_refuses_tls_1_1(server):
    context = client_context(None, ssl.TLSVersion.TLSv1_1)
    context.set_ciphers("ALL:@SECLEVEL=0")
    with pytest.raises(ssl.SSLError):
        handshake(server.port, context)


@pytest.mark.parametrize("cipher", MODERN_TLS12)
def test_https_serves_ecdhe_aead_suites_on_tls_1_2(server, cipher):
    assert handshake(server.port, client_context(cipher, ssl.TLSVersion.TLSv1_2)) == ("TLSv1.2", cipher)


def test_https_serves_tls_1_3(server):
    version, _ = handshake(server.port, client_context(None, ssl.TLSVersion.TLSv1_3))
    assert version == "TLSv1.3"


def test_the_router_and_the_controller_share_one_policy():
    assert router.tls_policy.TLS12_CIPHERS == tls.TLS12_CIPHERS


def router_handshake(qs, cipher: str | None, version: ssl.TLSVersion) -> str:
    """The cipher of a handshake with the router, presenting the dialer's certificate."""
    _client, identity = load_identity_file(qs.dialer)
    context = client_context(cipher, version)
    context.load_cert_chain(*identity.cert_key().write(Path(tempfile.mkdtemp(prefix="policy-"))))
    parts = urlsplit(qs.router_url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname=parts.hostname) as conn:
            return conn.cipher()[0]


def test_the_router_refuses_a_cbc_suite_and_serves_ecdhe_aead(ziti_quickstart):
    for cipher in (
        "AES128-SHA",
        "AES128-GCM-SHA256",
        CBC_SHA2,
        "ECDHE-ECDSA-AES128-SHA256",
        "ECDHE-ECDSA-AES256-SHA384",
    ):
        with pytest.raises((ssl.SSLError, ConnectionError)):  # the router closes without an alert
            router_handshake(ziti_quickstart, cipher, ssl.TLSVersion.TLSv1_2)
    for cipher in MODERN_TLS12:  # the router's key may be ECDSA or RSA: offer the suite with either
        either = f"{cipher}:{cipher.replace('-RSA-', '-ECDSA-')}"
        assert router_handshake(ziti_quickstart, either, ssl.TLSVersion.TLSv1_2) in either.split(":")
    assert router_handshake(ziti_quickstart, None, ssl.TLSVersion.TLSv1_3).startswith("TLS_")
