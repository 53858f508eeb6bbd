"""OIDC logins through the harness, as the C SDK and sdk-golang do them, then both APIs with the bearer token."""

from __future__ import annotations

import jwt
import pytest

from controller.app import create_app
from controller.config import Config
from harness.client import ZitiClient
from harness.dataplane import flows
from tests.flows.oidc_support import enrolled_identity, password_identity

STYLES = ["c", "go"]


def claims(token: str) -> dict:
    return jwt.decode(token, options={"verify_signature": False})


def test_version_advertises_oidc_as_the_sdks_look_for_it(ziti):
    info = ziti.edge.list_version()
    assert "OIDC_AUTH" in info["capabilities"] and "OIDC_AUTH_WITH_CSR" in info["capabilities"]
    entry = info["apiVersions"]["edge-oidc"]["v1"]
    assert entry["path"] == "/oidc" and entry["apiBaseUrls"][0].endswith("/oidc")
    assert ziti.edge.list_enumerated_capabilities() == ["OIDC_AUTH", "HA_CONTROLLER", "OIDC_AUTH_WITH_CSR"]


def test_oidc_off_advertises_and_serves_nothing():
    app = create_app(Config(oidc=False))
    with ZitiClient.in_process(app) as client:
        info = client.edge.list_version()
        assert info["capabilities"] == [] and "edge-oidc" not in info["apiVersions"]
        assert client.http.get("/oidc/.well-known/openid-configuration").status_code == 404
        assert client.http.post("/oidc/authorize").status_code == 404
        client.login("admin", "admin")
        assert client.management.list_identities(limit=1)
    app.controller.close()


def test_discovery_names_absolute_endpoints_of_the_request_host(ziti):
    reply = ziti.http.get("/oidc/.well-known/openid-configuration")
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("application/json")
    doc = reply.json()
    issuer = f"{ziti.http.base_url.scheme}://{ziti.http.base_url.netloc.decode()}/oidc"
    assert doc["issuer"] == issuer
    assert doc["authorization_endpoint"] == issuer + "/authorize" and doc["token_endpoint"] == issuer + "/oauth/token"
    assert doc["code_challenge_methods_supported"] == ["S256"]
    assert ziti.http.get("/.well-known/openid-configuration").json()["issuer"] == issuer
    # The document is encoded once per Host, never served to another one.
    for host in ("ctrl-a.example:1280", "ctrl-b.example:443", "ctrl-a.example:1280"):
        other = ziti.http.get("/oidc/.well-known/openid-configuration", headers={"Host": host}).json()
        assert other["issuer"] == f"{ziti.http.base_url.scheme}://{host}/oidc"
        assert other["jwks_uri"] == other["issuer"] + "/keys"


def test_keys_verify_the_access_token(ziti):
    ziti.login("admin", "admin", oidc="c")
    keys = {key["kid"]: key for key in ziti.http.get("/oidc/keys").json()["keys"]}
    header = jwt.get_unverified_header(ziti.oidc.access_token)
    key = jwt.PyJWK(keys[header["kid"]]).key
    verified = jwt.decode(
        ziti.oidc.access_token, key, algorithms=[header["alg"]], options={"verify_aud": False, "verify_exp": False}
    )
    assert verified["z_t"] == "a" and verified["z_ia"] is True


@pytest.mark.parametrize("style", STYLES)
def test_admin_password_login_by_oidc_reaches_both_apis(ziti, style):
    session = ziti.login("admin", "admin", oidc=style)
    access = claims(ziti.oidc.access_token)
    assert session["id"] == access["z_asid"] and session["token"] == ziti.oidc.access_token
    assert access["amr"] == ["password"] and access["aud"] == ["openziti" if style == "c" else "native"]
    assert ziti.oidc.refresh_token and claims(ziti.oidc.refresh_token)["z_t"] == "r"
    assert ziti.management.list_identities(filter='name = "Default Admin"')[0]["isAdmin"] is True
    assert ziti.edge.get_current_identity()["name"] == "Default Admin"
    assert claims(ziti.oidc.id_token)["name"] == "Default Admin"


def test_current_api_session_is_built_from_the_token(ziti, ziti_clock):
    ziti.login("admin", "admin", oidc="go")
    session = ziti.edge.get_current_api_session()
    access = ziti.oidc.claims
    assert session["identityId"] == access["sub"] and session["isMfaRequired"] is False
    assert session["authQueries"] == [] and session["expirationSeconds"] == 1800
    ziti_clock.advance(seconds=600)
    later = ziti.edge.get_current_api_session()
    assert later["expirationSeconds"] == 1200 and later["id"] == session["id"]
    # OIDC sessions are not stored: the management list shows none of them
    assert all(s["id"] != session["id"] for s in ziti.management.list_api_sessions())


@pytest.mark.parametrize("style", STYLES)
def test_certificate_login_lists_services_and_dials(ziti_admin, cert_client_of, cert_mode, ziti_unique, style):
    identity_id, identity = enrolled_identity(ziti_admin, ziti_unique("oidc-cert"), roleAttributes=["oidc-users"])
    service = ziti_admin.management.create_service(
        body={"name": ziti_unique("svc"), "roleAttributes": ["oidc-svc"], "encryptionRequired": True}
    )
    ziti_admin.management.create_edge_router(body={"name": ziti_unique("er"), "roleAttributes": ["oidc-er"]})
    for op, body in (
        ("create_service_policy", {"type": "Dial", "identityRoles": ["#oidc-users"], "serviceRoles": ["#oidc-svc"]}),
        ("create_edge_router_policy", {"identityRoles": ["#oidc-users"], "edgeRouterRoles": ["#oidc-er"]}),
        ("create_service_edge_router_policy", {"serviceRoles": ["#oidc-svc"], "edgeRouterRoles": ["#oidc-er"]}),
    ):
        getattr(ziti_admin.management, op)(body={"name": ziti_unique("p"), "semantic": "AnyOf", **body})
    client = cert_client_of(identity)
    session = client.login_cert(oidc=style, sdkInfo={"type": "ziti-sdk-c", "version": "1.18.3"})
    access = claims(client.oidc.access_token)
    assert session["identityId"] == identity_id and access["amr"] == ["cert"] and len(access["z_cfs"]) == 1
    assert [s["id"] for s in client.edge.list_services()] == [service["id"]]
    dial = client.edge.create_session(body={"serviceId": service["id"], "type": "Dial"})
    assert dial["apiSessionId"] == session["id"] and dial["edgeRouters"]
    assert ziti_admin.management.detail_identity(identity_id)["sdkInfo"]["version"] == "1.18.3"


def test_cert_bound_token_needs_the_certificate(ziti_admin, cert_client_of, ziti_app, ziti_unique):
    _, identity = enrolled_identity(ziti_admin, ziti_unique("pop"))
    client = cert_client_of(identity)
    client.login_cert(oidc="c")
    thief = ZitiClient.in_process(ziti_app)
    stolen = thief.http.get(
        "/edge/client/v1/current-identity", headers={"Authorization": f"Bearer {client.oidc.access_token}"}
    )
    assert stolen.status_code == 401
    assert (
        stolen.headers["www-authenticate"]
        == 'Bearer realm="openziti-oidc" error="invalid" error_description="token is invalid"'
    )


@pytest.mark.parametrize("style", STYLES)
def test_password_and_totp_login(ziti, ziti_admin, ziti_unique, ziti_clock, style):
    name = ziti_unique("oidc-totp")
    password_identity(ziti_admin, name)
    user = ZitiClient(ziti.http.__class__(transport=ziti.http._transport, base_url=ziti.http.base_url))
    user.now = ziti.now
    user.login(name, "s3cret-pw", api="client")
    device = flows.enroll_totp(user, at=ziti_clock.now())
    user.logout()
    answering = _AtClock(device, ziti_clock)
    session = user.login(name, "s3cret-pw", oidc=style, totp=answering)
    assert claims(user.oidc.access_token)["amr"] == ["password", "totp"] and session["isMfaComplete"] is True
    assert user.edge.get_current_identity()["name"] == name


class _AtClock:
    """A TOTP device read at the controller's frozen time."""

    def __init__(self, device, clock):
        self.device, self.clock = device, clock

    def code(self) -> str:
        return self.device.code(self.clock.now())
