"""Routers, edge routers and transit routers: views, name space, tunneler identity, enrollment."""

from __future__ import annotations

import jwt
from cryptography import x509

from harness.client import pki as hp
from tests.flows.test_enroll_router import csrs
from tests.support import CLIENT, assert_error, ok


def test_edge_router_view_before_enrollment(ziti_admin, make_edge_router, ziti_unique):
    name = ziti_unique("er")
    router_id = make_edge_router(name, attrs=["public"], cost=7, noTraversal=True, appData={"site": "a"}, tags={"t": 1})
    data = ziti_admin.mgmt_ok("GET", f"/edge-routers/{router_id}")
    assert data["name"] == name and data["roleAttributes"] == ["public"] and data["cost"] == 7
    assert data["noTraversal"] is True and data["disabled"] is False and data["appData"] == {"site": "a"}
    assert data["isVerified"] is False and data["fingerprint"] is None and data["isOnline"] is False
    assert data["hostname"] == "" and data["supportedProtocols"] == {} and data["syncStatus"] == "SYNC_UNKNOWN"
    assert data["isTunnelerEnabled"] is False and data["tags"] == {"t": 1}
    assert data["enrollmentToken"] and data["enrollmentJwt"].count(".") == 2
    assert data["enrollmentCreatedAt"] and data["enrollmentExpiresAt"] > data["enrollmentCreatedAt"]
    claims = jwt.decode(data["enrollmentJwt"], options={"verify_signature": False})
    assert claims["sub"] == router_id and claims["em"] == "erott" and claims["jti"] == data["enrollmentToken"]


def test_routers_share_one_name_space_and_listing(ziti_admin, make_edge_router, ziti_unique):
    name = ziti_unique("shared")
    edge_id = make_edge_router(name)
    assert_error(ziti_admin.mgmt("POST", "/transit-routers", json={"name": name}), 400, "COULD_NOT_VALIDATE", "name")
    assert_error(ziti_admin.mgmt("POST", "/routers", json={"name": name}), 400, "COULD_NOT_VALIDATE", "name")
    transit_id = ziti_admin.create("transit-routers", {"name": ziti_unique("tr")})
    everything = {r["id"] for r in ziti_admin.mgmt_ok("GET", "/routers", params={"limit": -1})}
    assert {edge_id, transit_id} <= everything
    assert transit_id not in {r["id"] for r in ziti_admin.mgmt_ok("GET", "/edge-routers", params={"limit": -1})}
    assert edge_id not in {r["id"] for r in ziti_admin.mgmt_ok("GET", "/transit-routers", params={"limit": -1})}
    assert ziti_admin.mgmt("GET", f"/edge-routers/{transit_id}").status_code == 404
    transit = ziti_admin.mgmt_ok("GET", f"/transit-routers/{transit_id}")
    assert transit["isVerified"] is False and transit["enrollmentJwt"] and transit["isOnline"] is False


def test_cost_is_bounded_and_appdata_is_flat(ziti_admin, ziti_unique):
    assert_error(
        ziti_admin.mgmt("POST", "/edge-routers", json={"name": ziti_unique(), "cost": 70000}),
        400,
        "COULD_NOT_VALIDATE",
        "cost",
    )
    response = ziti_admin.mgmt("POST", "/edge-routers", json={"name": ziti_unique(), "appData": {"nested": {"x": 1}}})
    assert response.status_code == 400


def test_tunneler_flag_creates_router_identity_and_system_policy(ziti_admin, make_edge_router, ziti_unique):
    name = ziti_unique("tun")
    router_id = make_edge_router(name, isTunnelerEnabled=True)
    identity = ziti_admin.mgmt_ok("GET", f"/identities/{router_id}")
    assert identity["name"] == name and identity["typeId"] == "Router" and identity["isAdmin"] is False
    policy = ziti_admin.mgmt_ok("GET", f"/edge-router-policies/{router_id}")
    assert policy["name"] == f"edge-router-{router_id}-system" and policy["isSystem"] is True
    assert policy["semantic"] == "AnyOf" and policy["identityRoles"] == [f"@{router_id}"]
    assert policy["edgeRouterRoles"] == [f"@{router_id}"]
    assert [r["id"] for r in ziti_admin.mgmt_ok("GET", f"/identities/{router_id}/edge-routers")] == [router_id]


def test_system_policy_and_router_identity_are_protected(ziti_admin, make_edge_router):
    router_id = make_edge_router(isTunnelerEnabled=True)
    assert_error(
        ziti_admin.mgmt("PATCH", f"/edge-router-policies/{router_id}", json={"name": "x"}),
        400,
        "ENTITY_CAN_NOT_BE_UPDATED",
    )
    assert_error(ziti_admin.mgmt("DELETE", f"/edge-router-policies/{router_id}"), 400, "ENTITY_CAN_NOT_BE_DELETED")
    assert_error(ziti_admin.mgmt("DELETE", f"/identities/{router_id}"), 400, "ENTITY_CAN_NOT_BE_DELETED")
    assert_error(
        ziti_admin.mgmt("PATCH", f"/identities/{router_id}", json={"name": "other"}), 400, "COULD_NOT_VALIDATE", "name"
    )
    assert_error(
        ziti_admin.mgmt("PATCH", f"/identities/{router_id}", json={"type": "User"}), 400, "COULD_NOT_VALIDATE", "typeId"
    )
    ziti_admin.mgmt_ok("PATCH", f"/identities/{router_id}", json={"roleAttributes": ["tunnelers"]})
    assert ziti_admin.mgmt_ok("GET", f"/identities/{router_id}")["roleAttributes"] == ["tunnelers"]


def test_renaming_the_router_renames_its_identity_and_clearing_the_flag_removes_both(
    ziti_admin, make_edge_router, ziti_unique
):
    router_id = make_edge_router(isTunnelerEnabled=True)
    new_name = ziti_unique("renamed")
    ziti_admin.mgmt_ok("PATCH", f"/edge-routers/{router_id}", json={"name": new_name})
    assert ziti_admin.mgmt_ok("GET", f"/identities/{router_id}")["name"] == new_name
    ziti_admin.mgmt_ok("PATCH", f"/edge-routers/{router_id}", json={"isTunnelerEnabled": False})
    assert ziti_admin.mgmt("GET", f"/identities/{router_id}").status_code == 404
    assert ziti_admin.mgmt("GET", f"/edge-router-policies/{router_id}").status_code == 404
    ziti_admin.mgmt_ok("PATCH", f"/edge-routers/{router_id}", json={"isTunnelerEnabled": True})
    assert ziti_admin.mgmt_ok("GET", f"/identities/{router_id}")["typeId"] == "Router"


def test_deleting_an_edge_router_removes_identity_policy_enrollment_and_references(
    ziti_admin, make_edge_router, make_policy
):
    router_id = make_edge_router(isTunnelerEnabled=True)
    enrollment_id = ziti_admin.mgmt_ok("GET", "/enrollments", params={"filter": f'edgeRouterId = "{router_id}"'})[0][
        "id"
    ]
    policy_id = make_policy("edge-router-policies", identityRoles=["#all"], edgeRouterRoles=[f"@{router_id}", "#x"])
    ziti_admin.mgmt_ok("DELETE", f"/edge-routers/{router_id}")
    for path in (
        f"/edge-routers/{router_id}",
        f"/identities/{router_id}",
        f"/edge-router-policies/{router_id}",
        f"/enrollments/{enrollment_id}",
    ):
        assert ziti_admin.mgmt("GET", path).status_code == 404, path
    assert ziti_admin.mgmt_ok("GET", f"/edge-router-policies/{policy_id}")["edgeRouterRoles"] == ["#x"]


def test_edge_router_enrolls_through_its_jwt_and_re_enrolls(ziti_admin, make_edge_router, make_cert_api):
    router_id = make_edge_router()
    token = ziti_admin.mgmt_ok("GET", f"/edge-routers/{router_id}")["enrollmentToken"]
    client_csr, _, server_csr = csrs(router_id)
    response = make_cert_api().request(
        "POST",
        CLIENT + "/enroll",
        params={"method": "erott", "token": token},
        json={"certCsr": client_csr, "serverCertCsr": server_csr},
    )
    assert ok(response)["cert"]
    data = ziti_admin.mgmt_ok("GET", f"/edge-routers/{router_id}")
    assert data["isVerified"] is True and data["fingerprint"] and data["certPem"]
    assert data["enrollmentToken"] is None and data["enrollmentJwt"] is None
    ziti_admin.mgmt_ok("POST", f"/edge-routers/{router_id}/re-enroll")
    data = ziti_admin.mgmt_ok("GET", f"/edge-routers/{router_id}")
    assert data["isVerified"] is False and data["fingerprint"] is None and data["enrollmentToken"] not in (None, token)
    assert ziti_admin.mgmt("POST", "/edge-routers/missing/re-enroll").status_code == 404


def test_role_filter_and_attributes_of_edge_routers(ziti_admin, make_edge_router, ziti_unique):
    prefix = ziti_unique("err")
    red = make_edge_router(prefix + "-red", attrs=["red"])
    make_edge_router(prefix + "-blue", attrs=["blue"])
    found = ziti_admin.mgmt_ok(
        "GET", "/edge-routers", params={"roleFilter": "#red", "filter": f'name contains "{prefix}"'}
    )
    assert [r["id"] for r in found] == [red]
    assert {"red", "blue"} <= set(ziti_admin.mgmt_ok("GET", "/edge-router-role-attributes"))


def test_current_identity_edge_routers_lists_verified_routers_by_policy(
    ziti_admin, make_client, make_edge_router, make_policy, ziti_app
):
    identity_id, client = make_client(attrs=["field"])
    reachable, hidden = make_edge_router(attrs=["edge"]), make_edge_router(attrs=["edge"])
    make_policy("edge-router-policies", identityRoles=["#field"], edgeRouterRoles=[f"@{reachable}"])
    assert client.edge_ok("GET", "/current-identity/edge-routers") == []
    ziti_app.controller.routing.routers.mark_enrolled(reachable, "pem", "fp-" + reachable, "server-pem")
    ziti_app.controller.routing.routers.mark_enrolled(hidden, "pem", "fp-" + hidden, "server-pem")
    listed = client.edge_ok("GET", "/current-identity/edge-routers")
    assert [r["id"] for r in listed] == [reachable]
    assert set(listed[0]) >= {"name", "hostname", "isOnline", "supportedProtocols", "syncStatus", "cost", "noTraversal"}
    assert [r["id"] for r in ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}/edge-routers")] == [reachable]
    assert [i["id"] for i in ziti_admin.mgmt_ok("GET", f"/edge-routers/{reachable}/identities")] == [identity_id]


def test_enrolled_edge_router_extends_with_its_current_certificate(ziti_admin, make_edge_router, make_cert_api):
    router_id = make_edge_router()
    token = ziti_admin.mgmt_ok("GET", f"/edge-routers/{router_id}")["enrollmentToken"]
    client_csr, client_key, server_csr = csrs(router_id)
    enrolled = ok(
        make_cert_api().request(
            "POST",
            CLIENT + "/enroll",
            params={"method": "erott", "token": token},
            json={"certCsr": client_csr, "serverCertCsr": server_csr},
        )
    )
    chain = x509.load_pem_x509_certificates(enrolled["cert"].encode())
    current = hp.CertKey(chain[0], client_key, chain[1:])
    new_client, _, new_server = csrs(router_id)
    extended = ok(
        make_cert_api(current).request(
            "POST", CLIENT + "/enroll/extend/router", json={"certCsr": new_client, "serverCertCsr": new_server}
        )
    )
    new_leaf = x509.load_pem_x509_certificates(extended["cert"].encode())[0]
    assert ziti_admin.mgmt_ok("GET", f"/edge-routers/{router_id}")["fingerprint"] == hp.sha1_fingerprint(new_leaf)
    assert_error(
        make_cert_api(current).request(
            "POST", CLIENT + "/enroll/extend/router", json={"certCsr": new_client, "serverCertCsr": new_server}
        ),
        401,
        "UNAUTHORIZED",
    )
