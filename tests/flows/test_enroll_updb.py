"""updb enrollment: a one-time token sets the password of a username chosen by the admin."""

from __future__ import annotations

import pytest

from tests.support import CLIENT, assert_error, new_identity, ok, pending


def enroll_updb(ziti, token, path=CLIENT + "/enroll", **body):
    params = {"token": token} if path.endswith("/updb") else {"method": "updb", "token": token}
    return ziti.request("POST", path, params=params, json=body)


@pytest.mark.parametrize("path", [CLIENT + "/enroll", CLIENT + "/enroll/updb"])
def test_updb_enrollment_sets_the_password_of_the_chosen_username(ziti_admin, ziti, ziti_unique, path):
    username = ziti_unique("user")
    identity_id = new_identity(ziti_admin, ziti_unique("updb"), {"updb": username})
    token = pending(ziti_admin, identity_id, "updb")["token"]
    assert ok(enroll_updb(ziti, token, path, username="someone-else", password="first-pass")) == {}
    assert ziti.signed_in(username, "first-pass").edge_ok("GET", "/current-identity")["id"] == identity_id
    detail = ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")
    assert detail["enrollment"] == {} and detail["authenticators"]["updb"]["username"] == username
    assert_error(enroll_updb(ziti, token, path, password="again-pass"), 400, "INVALID_ENROLLMENT_TOKEN")


def test_updb_enrollment_needs_a_valid_password(ziti_admin, ziti, ziti_unique):
    identity_id = new_identity(ziti_admin, ziti_unique("updb-pw"), {"updb": ziti_unique("pwuser")})
    token = pending(ziti_admin, identity_id, "updb")["token"]
    assert_error(enroll_updb(ziti, token), 400, "COULD_NOT_VALIDATE", "password")
    assert_error(enroll_updb(ziti, token, password="abc"), 400, "COULD_NOT_VALIDATE", "password")
    assert ok(enroll_updb(ziti, token, password="long-enough")) == {}


def test_expired_updb_token(ziti_admin, ziti, ziti_clock, ziti_unique):
    identity_id = new_identity(ziti_admin, ziti_unique("updb-late"), {"updb": ziti_unique("lateuser")})
    token = pending(ziti_admin, identity_id, "updb")["token"]
    ziti_clock.advance(minutes=181)
    assert_error(enroll_updb(ziti, token, password="too-late-1"), 400, "ENROLLMENT_EXPIRED")
