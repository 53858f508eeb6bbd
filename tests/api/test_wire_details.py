"""Wire details the official documents require: permissions, omitted keys, required fields."""

from __future__ import annotations

from controller.api.mappers.entity import ref
from harness.client import pki as hp
from tests.support import create_ca

ZERO_TIME = "0001-01-01T00:00:00.000Z"
LATER = "2099-01-01T00:00:00.000Z"


def test_identity_permissions_are_stored_and_shown_everywhere(ziti_admin, ziti, make_identity, ziti_unique):
    name = ziti_unique("perm")
    identity_id = make_identity(name, password="perm-pass", permissions=["service.read", "identity"])
    assert ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")["permissions"] == ["service.read", "identity"]
    listed = ziti_admin.mgmt_ok("GET", "/identities", params={"filter": f'name = "{name}"'})
    assert [i["permissions"] for i in listed] == [["service.read", "identity"]]
    for api_name in ("management", "client"):
        session = ziti.signed_in(name, "perm-pass", api=api_name)
        send = session.mgmt_ok if api_name == "management" else session.edge_ok
        assert send("GET", "/current-identity")["permissions"] == ["service.read", "identity"]
    ziti_admin.mgmt_ok("PATCH", f"/identities/{identity_id}", json={"permissions": ["ops.read"]})
    assert ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")["permissions"] == ["ops.read"]
    assert ziti_admin.mgmt_ok("GET", "/current-identity")["permissions"] == []


def test_unknown_permission_is_a_field_error(ziti_admin, ziti_unique):
    response = ziti_admin.mgmt(
        "POST",
        "/identities",
        json={"name": ziti_unique(), "type": "User", "isAdmin": False, "permissions": ["everything"]},
    )
    assert response.status_code == 400 and response.json()["error"]["cause"]["field"].startswith("permissions")


def test_enrollment_omits_unset_keys_and_carries_details(ziti_admin, make_identity, make_edge_router, ziti_unique):
    identity_id = make_identity(ziti_unique("enr"))
    enrollment_id = ziti_admin.create("enrollments", {"method": "ott", "identityId": identity_id, "expiresAt": LATER})
    detail = ziti_admin.mgmt_ok("GET", f"/enrollments/{enrollment_id}")
    assert not {"username", "caId", "ca"} & set(detail) and "details" in detail
    assert None not in detail.values()
    router_id = make_edge_router()
    (router_enrollment,) = ziti_admin.mgmt_ok("GET", "/enrollments", params={"filter": f'edgeRouterId = "{router_id}"'})
    assert not {"identity", "identityId", "username"} & set(router_enrollment)
    updb_id = ziti_admin.create(
        "enrollments",
        {
            "method": "updb",
            "identityId": make_identity(ziti_unique("enr")),
            "username": ziti_unique("updbuser"),
            "expiresAt": LATER,
        },
    )
    assert ziti_admin.mgmt_ok("GET", f"/enrollments/{updb_id}")["username"].startswith("updbuser")


def test_entity_reference_of_a_missing_entity_has_no_name(ziti_app):
    ctl = ziti_app.controller
    assert ref(ctl.accounts.identities, "missing") == {
        "_links": {"self": {"href": "./identities/missing"}},
        "entity": "identities",
        "id": "missing",
    }
    assert "name" not in ref(ctl.routing.edge_routers, "missing")


def test_ca_without_external_id_claim_omits_it(ziti_admin, ziti_clock, ziti_unique):
    ca_id = create_ca(ziti_admin, ziti_unique("ca"), hp.make_root_ca(now=ziti_clock.now()))
    assert "externalIdClaim" not in ziti_admin.mgmt_ok("GET", f"/cas/{ca_id}")


def test_signer_omits_unset_selectors_and_shows_zero_times_without_a_certificate(ziti_admin, ziti_unique):
    signer_id = ziti_admin.create(
        "external-jwt-signers",
        {
            "name": ziti_unique("sig"),
            "issuer": "https://issuer.example",
            "audience": "aud",
            "jwksEndpoint": "https://issuer.example/jwks",
            "enabled": True,
        },
    )
    detail = ziti_admin.mgmt_ok("GET", f"/external-jwt-signers/{signer_id}")
    assert not {"enrollNameClaimsSelector", "enrollAttributeClaimsSelector", "enrollAuthPolicyId"} & set(detail)
    assert detail["notAfter"] == ZERO_TIME and detail["notBefore"] == ZERO_TIME


def test_api_session_and_edge_router_carry_the_required_fields(ziti_admin, make_edge_router):
    (session,) = [
        s for s in ziti_admin.mgmt_ok("GET", "/api-sessions", params={"limit": -1}) if s["token"] == ziti_admin.token
    ]
    assert session["cachedUpdatedAt"] == session["updatedAt"]
    router = ziti_admin.mgmt_ok("GET", f"/edge-routers/{make_edge_router()}")
    for key in ("os", "arch", "version", "revision", "buildDate"):
        assert router[key] == router["versionInfo"][key]


def test_empty_limit_and_negative_offset_are_treated_as_the_real_controller(ziti_admin):
    # NOTE(harden): the real controller reads an empty ``limit`` as absent and clamps a negative offset to 0.
    for query in ("limit=", "offset=-5", "limit=&offset=", "limit=-7"):
        pagination = ziti_admin.mgmt("GET", "/identities?" + query).json()["meta"]["pagination"]
        assert (pagination["limit"], pagination["offset"]) == (10, 0), query
    bad = ziti_admin.mgmt("GET", "/identities?limit=ten")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "INVALID_PAGINATION"
