"""Revocations: JTI entries are recorded; IDENTITY and API_SESSION end API sessions at once."""

from __future__ import annotations

from tests.support import assert_error


def test_identity_revocation_ends_its_sessions(ziti, ziti_admin, make_identity, ziti_clock):
    identity_id = make_identity(password="pass-word", username="revoked-one")
    session = ziti.signed_in("revoked-one", "pass-word")
    assert ziti_admin.mgmt("POST", "/revocations", json={"id": identity_id, "type": "IDENTITY"}).status_code == 201
    assert session.mgmt("GET", "/current-identity").status_code == 401
    detail = ziti_admin.mgmt_ok("GET", f"/revocations/{identity_id}")
    assert detail["type"] == "IDENTITY" and detail["expiresAt"] > detail["createdAt"]
    assert ziti.signed_in("revoked-one", "pass-word").token  # a new login still works


def test_api_session_revocation_ends_that_session(ziti, ziti_admin, make_identity):
    make_identity(password="pass-word", username="revoked-two")
    first, second = ziti.signed_in("revoked-two", "pass-word"), ziti.signed_in("revoked-two", "pass-word")
    session_id = first.mgmt_ok("GET", "/current-api-session")["id"]
    ziti_admin.mgmt_ok("POST", "/revocations", json={"id": session_id, "type": "API_SESSION"})
    assert first.mgmt("GET", "/current-identity").status_code == 401
    assert second.mgmt("GET", "/current-identity").status_code == 200


def test_jti_revocation_is_recorded_and_listed(ziti_admin):
    ziti_admin.mgmt_ok("POST", "/revocations", json={"id": "some-jti", "type": "JTI"})
    listed = ziti_admin.mgmt_ok("GET", "/revocations", params={"filter": 'type = "JTI"'})
    assert [r["id"] for r in listed] == ["some-jti"]


def test_bad_revocations_are_refused(ziti_admin):
    assert_error(
        ziti_admin.mgmt("POST", "/revocations", json={"id": "x", "type": "EVERYTHING"}),
        400,
        "COULD_NOT_VALIDATE",
        "type",
    )
    assert_error(ziti_admin.mgmt("POST", "/revocations", json={"id": "missing", "type": "IDENTITY"}), 404, "NOT_FOUND")
    ziti_admin.mgmt_ok("POST", "/revocations", json={"id": "twice", "type": "JTI"})
    assert_error(
        ziti_admin.mgmt("POST", "/revocations", json={"id": "twice", "type": "JTI"}), 400, "COULD_NOT_VALIDATE", "id"
    )
