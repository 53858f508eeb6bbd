"""Enrollments on the management API: create, list, detail, delete, refresh, identity views."""

from __future__ import annotations

from datetime import timedelta

import jwt
import pytest

from controller.clock import rfc3339
from harness.client import pki as hp
from tests.support import CLIENT, CONTROLLER_URL, assert_error, create_ca, new_identity, pending

LATER = "2099-01-01T00:00:00.000Z"


def test_identity_create_with_ott_ottca_and_updb_enrollments(ziti_admin, ziti_clock, ziti_unique):
    ca_id = create_ca(ziti_admin, ziti_unique("ca"), hp.make_root_ca(now=ziti_clock.now()))
    identity_id = new_identity(
        ziti_admin, ziti_unique("all3"), {"ott": True, "ottca": ca_id, "updb": ziti_unique("user")}
    )
    enrollment = ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")["enrollment"]
    assert set(enrollment) == {"ott", "ottca", "updb"}
    for method, entry in enrollment.items():
        assert {"id", "jwt", "token", "expiresAt"} <= set(entry)
        claims = jwt.decode(entry["jwt"], options={"verify_signature": False})
        assert claims["em"] == method and claims["jti"] == entry["token"] and claims["sub"] == identity_id
    assert enrollment["ottca"]["caId"] == ca_id and enrollment["ottca"]["ca"]["id"] == ca_id
    listed = ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}/enrollments")
    assert {e["method"] for e in listed} == {"ott", "ottca", "updb"}


def test_create_detail_list_and_delete(ziti_admin, ziti_unique):
    identity_id = new_identity(ziti_admin, ziti_unique("crud"))
    response = ziti_admin.mgmt(
        "POST", "/enrollments", json={"method": "ott", "identityId": identity_id, "expiresAt": LATER}
    )
    assert response.status_code == 201
    enrollment_id = response.json()["data"]["id"]
    detail = ziti_admin.mgmt_ok("GET", f"/enrollments/{enrollment_id}")
    assert detail["method"] == "ott" and detail["identityId"] == identity_id and detail["expiresAt"] == LATER
    assert detail["identity"]["id"] == identity_id and detail["token"] and detail["jwt"]
    assert jwt.decode(detail["jwt"], options={"verify_signature": False})["exp"] == 4070908800
    listed = ziti_admin.mgmt("GET", "/enrollments", params={"filter": f'identityId = "{identity_id}"'}).json()
    assert [e["id"] for e in listed["data"]] == [enrollment_id] and "method" in listed["meta"]["filterableFields"]
    ziti_admin.mgmt_ok("DELETE", f"/enrollments/{enrollment_id}")
    assert_error(ziti_admin.mgmt("GET", f"/enrollments/{enrollment_id}"), 404, "NOT_FOUND")


def test_second_enrollment_of_a_method_is_409(ziti_admin, ziti_unique):
    identity_id = new_identity(ziti_admin, ziti_unique("dup"), {"ott": True})
    response = ziti_admin.mgmt(
        "POST", "/enrollments", json={"method": "ott", "identityId": identity_id, "expiresAt": LATER}
    )
    assert_error(response, 409, "ENROLLMENT_EXISTS")


@pytest.mark.parametrize(
    "body, field",
    [
        ({"method": "ott", "expiresAt": LATER}, "identityId"),
        ({"method": "ott", "identityId": "x"}, "expiresAt"),
        ({"method": "magic", "identityId": "x", "expiresAt": LATER}, "method"),
        ({"method": "ott", "identityId": "x", "expiresAt": "tomorrow"}, "expiresAt"),
    ],
)
def test_invalid_enrollment_bodies_are_400(ziti_admin, body, field):
    assert_error(ziti_admin.mgmt("POST", "/enrollments", json=body), 400, "COULD_NOT_VALIDATE", field)


def test_ottca_needs_a_ca_and_updb_a_free_username(ziti_admin, make_identity, ziti_unique):
    identity_id = new_identity(ziti_admin, ziti_unique("needs"))
    response = ziti_admin.mgmt(
        "POST", "/enrollments", json={"method": "ottca", "identityId": identity_id, "expiresAt": LATER}
    )
    assert_error(response, 400, "COULD_NOT_VALIDATE", "caId")
    response = ziti_admin.mgmt(
        "POST", "/enrollments", json={"method": "ottca", "identityId": identity_id, "expiresAt": LATER, "caId": "nope"}
    )
    assert_error(response, 404, "NOT_FOUND")
    make_identity(password="pass-word", username="taken-name")
    response = ziti_admin.mgmt(
        "POST",
        "/enrollments",
        json={"method": "updb", "identityId": identity_id, "expiresAt": LATER, "username": "taken-name"},
    )
    assert_error(response, 400, "COULD_NOT_VALIDATE", "username")
    assert_error(
        ziti_admin.mgmt("POST", "/enrollments", json={"method": "ott", "identityId": "nope", "expiresAt": LATER}),
        404,
        "NOT_FOUND",
    )


def test_refresh_gives_a_new_token_and_jwt_and_the_old_ones_stop_working(ziti_admin, ziti, ziti_unique):
    identity_id = new_identity(ziti_admin, ziti_unique("refresh"), {"ott": True})
    before = pending(ziti_admin, identity_id, "ott")
    response = ziti_admin.mgmt("POST", f"/enrollments/{before['id']}/refresh", json={"expiresAt": LATER})
    assert response.status_code == 200 and response.json()["data"]["id"] == before["id"]
    after = pending(ziti_admin, identity_id, "ott")
    assert after["token"] != before["token"] and after["jwt"] != before["jwt"] and after["expiresAt"] == LATER
    csr, _ = hp.make_csr(identity_id)
    stale = ziti.request(
        "POST",
        CLIENT + "/enroll",
        params={"method": "ott", "token": before["token"]},
        content=hp.csr_pem(csr),
        headers={"content-type": "text/plain"},
    )
    assert_error(stale, 400, "INVALID_ENROLLMENT_TOKEN")
    fresh = ziti.request(
        "POST",
        CLIENT + "/enroll",
        params={"method": "ott", "token": after["token"]},
        content=hp.csr_pem(csr),
        headers={"content-type": "text/plain"},
    )
    assert fresh.status_code == 200
    assert_error(ziti_admin.mgmt("POST", "/enrollments/nope/refresh", json={"expiresAt": LATER}), 404, "NOT_FOUND")


@pytest.mark.parametrize("seconds_ago", [1, 3600, 10**9])
def test_past_expiry_is_a_400_on_create_and_refresh(ziti_admin, ziti_clock, ziti_unique, seconds_ago):
    past = rfc3339(ziti_clock.now() - timedelta(seconds=seconds_ago))
    identity_id = new_identity(ziti_admin, ziti_unique("past"), {"ott": True})
    created = ziti_admin.mgmt(
        "POST",
        "/enrollments",
        json={"method": "updb", "identityId": identity_id, "username": ziti_unique("pastuser"), "expiresAt": past},
    )
    assert "must be in the future" in assert_error(created, 400, "COULD_NOT_VALIDATE", "expiresAt")["cause"]["reason"]
    before = pending(ziti_admin, identity_id, "ott")
    refreshed = ziti_admin.mgmt("POST", f"/enrollments/{before['id']}/refresh", json={"expiresAt": past})
    assert_error(refreshed, 400, "COULD_NOT_VALIDATE", "expiresAt")
    assert pending(ziti_admin, identity_id, "ott") == before
    assert "updb" not in ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")["enrollment"]


def test_expiry_follows_the_configured_duration(ziti_admin, ziti_clock, ziti_unique):
    identity_id = new_identity(ziti_admin, ziti_unique("duration"), {"ott": True})
    claims = jwt.decode(pending(ziti_admin, identity_id, "ott")["jwt"], options={"verify_signature": False})
    assert claims["exp"] == int(ziti_clock.now().timestamp()) + 180 * 60 and claims["iss"] == CONTROLLER_URL


def test_deleting_the_identity_deletes_its_enrollments(ziti_admin, ziti_unique):
    identity_id = new_identity(ziti_admin, ziti_unique("gone"), {"ott": True})
    enrollment_id = pending(ziti_admin, identity_id, "ott")["id"]
    ziti_admin.mgmt_ok("DELETE", f"/identities/{identity_id}")
    assert_error(ziti_admin.mgmt("GET", f"/enrollments/{enrollment_id}"), 404, "NOT_FOUND")


def test_router_enrollments_name_their_router(ziti_admin, ziti_unique):
    name = ziti_unique("er-enr")
    router_id = ziti_admin.create("edge-routers", {"name": name})
    [enrollment] = ziti_admin.mgmt_ok("GET", "/enrollments", params={"filter": f'edgeRouterId = "{router_id}"'})
    assert enrollment["method"] == "erott" and enrollment["edgeRouterId"] == router_id
    assert enrollment["edgeRouter"]["name"] == name and "identityId" not in enrollment
    claims = jwt.decode(enrollment["jwt"], options={"verify_signature": False})
    assert claims["sub"] == router_id and claims["em"] == "erott"
