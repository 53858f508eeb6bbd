"""The harness's flow drivers: enroll, log in, TOTP, dial, posture, extend, routers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.client import ApiError, ZitiClient
from harness.dataplane import flows
from harness.network import apply

DEMO = Path(__file__).resolve().parents[2] / "fixtures" / "networks" / "demo.yaml"


@pytest.fixture
def admin_client(ziti_app):
    with ZitiClient.in_process(ziti_app) as client:
        client.login("admin", "admin")
        yield client


@pytest.fixture
def connect(ziti_app, ziti_mode, request):
    """Clients of the test's controller in the chosen mode (in-process or over a real HTTP server)."""

    def make() -> ZitiClient:
        if ziti_mode == "inprocess":
            return ZitiClient.in_process(ziti_app)
        holder, server = request.getfixturevalue("ziti_http_server")
        holder.app = ziti_app
        return ZitiClient.connect(server.url)

    return make


def new_ott_identity(admin_client, name, **fields) -> str:
    created = admin_client.management.create_identity(
        body={"name": name, "type": "Device", "isAdmin": False, "enrollment": {"ott": True}, **fields}
    )
    return admin_client.management.detail_identity(created["id"])["enrollment"]["ott"]["jwt"]


def test_ott_enrollment_then_certificate_login_in_process(ziti_app, admin_client):
    token = new_ott_identity(admin_client, "flow-ott")
    with ZitiClient.in_process(ziti_app) as anonymous:
        identity = flows.enroll_ott(anonymous, token)
    assert identity.api_url.startswith("https://") and "BEGIN CERTIFICATE" in identity.cert_pem
    with flows.cert_client(ziti_app, identity) as device:
        flows.login_cert(device)
        assert device.edge.get_current_identity()["name"] == "flow-ott"


def test_identity_file_loads_over_real_tls(ziti_app, admin_client, https_server, tmp_path):
    holder, server, _ = https_server
    holder.app = ziti_app
    url = f"https://127.0.0.1:{server.port}"
    token = new_ott_identity(admin_client, "flow-file")
    with ZitiClient.in_process(ziti_app) as anonymous:
        identity = flows.enroll_ott(anonymous, token)
    identity.api_url = url
    path = flows.write_identity_file(identity, tmp_path / "flow-file.json")
    saved = json.loads(path.read_text())
    assert saved["ztAPI"] == url and saved["ztAPIs"] == [url] and saved["id"]["cert"].startswith("pem:")
    with ZitiClient.from_identity_file(path) as device:
        flows.login_cert(device)
        assert device.edge.get_current_identity()["name"] == "flow-file"


def test_updb_enrollment_then_password_login(connect, admin_client):
    created = admin_client.management.create_identity(
        body={"name": "flow-updb", "type": "User", "isAdmin": False, "enrollment": {"updb": "flow-updb-user"}}
    )
    token = admin_client.management.detail_identity(created["id"])["enrollment"]["updb"]["jwt"]
    with connect() as user:
        flows.enroll_updb(user, token, "updb-pass-1")
        assert flows.login_password(user, "flow-updb-user", "updb-pass-1")["identity"]["name"] == "flow-updb"


def test_totp_enrollment_and_second_factor(connect, admin_client, ziti_clock):
    admin_client.management.create_identity(body={"name": "flow-totp", "type": "User", "isAdmin": False})
    identity_id = next(admin_client.management.iterate("listIdentities", filter='name = "flow-totp"'))["id"]
    admin_client.management.create_authenticator(
        body={"identityId": identity_id, "method": "updb", "username": "flow-totp", "password": "totp-pass-1"}
    )
    with connect() as user:
        flows.login_password(user, "flow-totp", "totp-pass-1")
        device = flows.enroll_totp(user, at=ziti_clock.now())
        assert len(device.recovery_codes) == 20
        session = flows.login_password(user, "flow-totp", "totp-pass-1")
        assert [q["typeId"] for q in session["authQueries"]] == ["MFA"]
        with pytest.raises(ApiError):
            user.edge.list_services()
        flows.complete_mfa(user, device, at=ziti_clock.now())
        assert user.edge.get_current_api_session()["isMfaComplete"] is True


def test_dial_and_posture_on_the_demo_network(connect, admin_client):
    apply(admin_client, yaml.safe_load(DEMO.read_text()))
    with connect() as alice:
        flows.login_password(alice, "alice", "alice-pass")
        session = flows.dial(alice, "web")
        assert session["type"] == "Dial" and session["edgeRouters"]
        assert flows.dial(alice, "web")["id"] == session["id"]
        assert flows.submit_posture(alice, {"id": "none", "typeId": "DOMAIN", "domain": "corp"}) is not None


def test_certificate_extension_keeps_working(ziti_app, admin_client):
    token = new_ott_identity(admin_client, "flow-extend")
    with ZitiClient.in_process(ziti_app) as anonymous:
        identity = flows.enroll_ott(anonymous, token)
    with flows.cert_client(ziti_app, identity) as device:
        flows.login_cert(device)
        renewed = flows.extend_certificate(device, identity)
    assert renewed.cert_pem != identity.cert_pem
    with flows.cert_client(ziti_app, renewed) as device:
        flows.login_cert(device)
        assert device.edge.get_current_identity()["name"] == "flow-extend"


def test_edge_router_enrollment(ziti_app, admin_client):
    created = admin_client.management.create_edge_router(body={"name": "flow-router"})
    router = admin_client.management.detail_edge_router(created["id"])
    with ZitiClient.in_process(ziti_app) as anonymous:
        certs = flows.enroll_router(anonymous, router["enrollmentJwt"])
    assert "BEGIN CERTIFICATE" in certs.cert_pem and "BEGIN CERTIFICATE" in certs.server_cert_pem
    assert admin_client.management.detail_edge_router(created["id"])["isVerified"] is True


def test_client_login_answers_the_mfa_query_and_relogs_in(connect, admin_client, ziti_clock, ziti_app):
    from datetime import datetime

    class ClockedDevice(flows.TotpDevice):
        def code(self, at: datetime | None = None) -> str:
            return super().code(at or ziti_clock.now())

    admin_client.management.create_identity(body={"name": "flow-mfa-login", "type": "User", "isAdmin": False})
    identity_id = next(admin_client.management.iterate("listIdentities", filter='name = "flow-mfa-login"'))["id"]
    admin_client.management.create_authenticator(
        body={"identityId": identity_id, "method": "updb", "username": "flow-mfa-login", "password": "mfa-pass-1"}
    )
    with connect() as user:
        user.login("flow-mfa-login", "mfa-pass-1", api="client")
        enrolled = flows.enroll_totp(user, at=ziti_clock.now())
        device = ClockedDevice(enrolled.secret, enrolled.recovery_codes)
    with connect() as user:
        session = user.login("flow-mfa-login", "mfa-pass-1", api="client", totp=device)
        assert session["isMfaComplete"] is True and session["authQueries"] == []
        ziti_clock.advance(minutes=31)
        assert user.edge.list_services() == []  # expired, logged in again with a fresh code
