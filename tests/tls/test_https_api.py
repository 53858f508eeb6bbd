"""The controller over real TLS on 127.0.0.1, driven like a real SDK (cryptography + httpx + ssl only)."""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time

import httpx
import pytest
from cryptography import x509

from controller.config import Config
from harness.client import pki as hp
from harness.client.enroll import (
    EnrolledIdentity,
    ott_csr,
    parse_cacerts,
    pem_bundle,
    served_certificate,
    verify_enrollment_jwt,
)
from tests.support import ENV_INFO, SDK_INFO, ok

SDK_HEADERS = {"Accept": "application/json", "Accept-Encoding": "gzip, deflate", "User-Agent": "harness-sdk (OpenSSL)"}


@pytest.fixture
def base_url(https_server, ziti_app):
    holder, server, _ = https_server
    holder.app = ziti_app
    return f"https://127.0.0.1:{server.port}"


def sdk_client(base_url: str, *, verify, identity: hp.CertKey | None = None) -> httpx.Client:
    ctx = verify if isinstance(verify, bool) else hp.client_ssl_context(verify, identity)
    return httpx.Client(base_url=base_url, verify=ctx, headers=SDK_HEADERS, timeout=10)


# The legacy SDK sequence: with OIDC advertised a current SDK would log in by OIDC instead
# (tests/flows/test_oidc_login.py drives that one over real TLS).
@pytest.mark.parametrize("ziti_config", [Config(oidc=False)], ids=["legacy-only"])
def test_sdk_enrolls_over_https_and_logs_in_with_its_certificate(ziti_admin, base_url, tmp_path, ziti_unique):
    identity_id = ziti_admin.create(
        "identities", {"name": ziti_unique("sdk"), "type": "Device", "isAdmin": False, "enrollment": {"ott": True}}
    )
    enrollment_jwt = ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")["enrollment"]["ott"]["jwt"]

    # 1. first look, no client certificate, nothing trusted yet; the JWT must verify with the served cert's key
    with sdk_client(base_url, verify=False) as first:
        version = ok(first.get("/version"))
        assert version["apiVersions"]["edge"]["v1"]["path"] == "/edge/client/v1" and version["capabilities"] == []
        served = served_certificate(base_url)
        claims = verify_enrollment_jwt(enrollment_jwt, served)
        assert claims["sub"] == identity_id and claims["em"] == "ott"
        # 2. the CA bundle, which must hold the CA the served certificate chains to
        cacerts = first.get("/edge/client/v1/.well-known/est/cacerts")
        assert cacerts.headers["content-type"].startswith("application/pkcs7-mime")
        bundle = parse_cacerts(cacerts.text)
        assert served.issuer in {c.subject for c in bundle}
    ca_pem = pem_bundle(bundle)

    # 3-4. a new connection trusting only that bundle; enroll with a text/plain CSR
    csr_pem, key = ott_csr(claims["sub"], claims["iss"])
    with sdk_client(base_url, verify=ca_pem) as trusted:
        assert ok(trusted.get("/version"))["version"]
        response = trusted.post(
            "/edge/client/v1/enroll",
            params={"method": "ott", "token": claims["jti"]},
            content=csr_pem,
            headers={"Content-Type": "text/plain"},
        )
        cert_pem = ok(response)["cert"]

    # 5. the identity file
    path = tmp_path / "identity.json"
    path.write_text(EnrolledIdentity(base_url, cert_pem, hp.key_pem(key), ca_pem).dumps())
    identity_file = json.loads(path.read_text())
    assert set(identity_file) == {"ztAPI", "ztAPIs", "id"} and set(identity_file["id"]) == {"cert", "key", "ca"}

    # login: every request presents the certificate, on one keep-alive connection
    enrolled = EnrolledIdentity(
        identity_file["ztAPI"], identity_file["id"]["cert"], identity_file["id"]["key"], identity_file["id"]["ca"]
    ).cert_key()
    with sdk_client(identity_file["ztAPI"], verify=identity_file["id"]["ca"], identity=enrolled) as sdk:
        assert ok(sdk.get("/version"))["apiVersions"]["edge"]["v1"]["path"] == "/edge/client/v1"
        login = sdk.post("/authenticate", params={"method": "cert"}, json={"sdkInfo": SDK_INFO, "envInfo": ENV_INFO})
        session = ok(login)
        assert session["identityId"] == identity_id and session["isCertExtendable"] is True
        headers = {"zt-session": session["token"]}
        assert sdk.get("/edge/client/v1/.well-known/est/cacerts").status_code == 200
        assert ok(sdk.get("/edge/client/v1/current-identity", headers=headers))["id"] == identity_id
        assert ok(sdk.get("/edge/client/v1/current-api-session", headers=headers))["token"] == session["token"]
        assert ok(sdk.get("/edge/client/v1/current-identity", headers=headers))["sdkInfo"]["type"] == "ziti-sdk-c"


def test_third_party_chain_is_judged_by_the_app_not_the_handshake(ziti_admin, base_url, ziti_clock, ziti_unique):
    """An unknown CA's chain completes the handshake; only a verified, auth-enabled CA logs in."""
    root = hp.make_root_ca("TLS Third Party", now=ziti_clock.now())
    inter = hp.make_intermediate_ca(root, now=ziti_clock.now())
    client = hp.make_leaf(inter, "tls-tp", now=ziti_clock.now())
    identity_id = ziti_admin.create("identities", {"name": ziti_unique("tls-tp"), "type": "User", "isAdmin": False})
    ziti_admin.create("authenticators", {"identityId": identity_id, "method": "cert", "certPem": client.cert_pem})
    with sdk_client(base_url, verify=False) as first:
        ca_pem = pem_bundle(parse_cacerts(first.get("/.well-known/est/cacerts").text))
    with sdk_client(base_url, verify=ca_pem, identity=client) as sdk:
        assert sdk.post("/authenticate", params={"method": "cert"}, json={}).status_code == 401
        ca_id = ziti_admin.create(
            "cas",
            {
                "name": ziti_unique("tls-ca"),
                "certPem": root.cert_pem,
                "isAuthEnabled": True,
                "isAutoCaEnrollmentEnabled": False,
                "isOttCaEnrollmentEnabled": False,
                "identityRoles": [],
            },
        )
        assert sdk.post("/authenticate", params={"method": "cert"}, json={}).status_code == 401  # unverified
        token = ziti_admin.mgmt_ok("GET", f"/cas/{ca_id}")["verificationToken"]
        ziti_admin.mgmt_ok(
            "POST",
            f"/cas/{ca_id}/verify",
            content=hp.make_leaf(root, token, now=ziti_clock.now()).cert_pem,
            headers={"content-type": "text/plain"},
        )
        assert ok(sdk.post("/authenticate", params={"method": "cert"}, json={}))["identityId"] == identity_id


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_listening(port: int, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            threading.Event().wait(0.05)
    raise TimeoutError(f"nothing listens on {port}")


def test_run_serves_https_and_http_with_a_certificate_for_the_configured_names(tmp_path):
    from controller.embedded import serve

    https_port, http_port = _free_port(), _free_port()
    config = Config(
        data_dir=tmp_path / "data",
        api_address=f"127.0.0.1:{https_port}",
        hostnames=("localhost", "ctrl.example.test"),
        fsync=False,
    )
    stop = threading.Event()
    thread = threading.Thread(
        target=serve, args=(config,), kwargs={"port": https_port, "http_port": http_port, "stop": stop}, daemon=True
    )
    thread.start()
    try:
        _wait_listening(https_port)
        _wait_listening(http_port)
        base = f"https://127.0.0.1:{https_port}"
        served = served_certificate(base)
        sans = served.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert {"localhost", "ctrl.example.test"} <= set(sans.get_values_for_type(x509.DNSName))
        assert "127.0.0.1" in {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)}
        with httpx.Client(verify=False, timeout=10) as first:
            ca_pem = pem_bundle(parse_cacerts(first.get(base + "/.well-known/est/cacerts").text))
        ctx = ssl.create_default_context(cadata=ca_pem)
        with socket.create_connection(("127.0.0.1", https_port)) as raw:
            with ctx.wrap_socket(raw, server_hostname="ctrl.example.test") as tls:
                assert tls.version() in ("TLSv1.2", "TLSv1.3")
        with httpx.Client(verify=ctx, timeout=10) as https:
            assert ok(https.get(base + "/edge/management/v1/version"))["version"]
        with httpx.Client(timeout=10) as plain:
            assert ok(plain.get(f"http://127.0.0.1:{http_port}/edge/client/v1/version"))["version"]
    finally:
        stop.set()
        thread.join(15)
    assert (tmp_path / "data" / "pki" / "server.cert.pem").exists()
