"""TOTP MFA through the HTTP API: the spec's MFA rows, partial sessions, recovery codes, QR code."""

from __future__ import annotations

import re
import struct
import zlib

import pytest
import segno

from controller.config import Config
from tests.support import TOTP_QUERY, assert_error, code, enroll_verified, secret_of, start_enrollment

WRONG = "abcdef"  # never a TOTP code: not digits


# -- setup helpers: they return or raise, never assert -------------------------------


@pytest.fixture
def user(ziti, make_identity, ziti_unique):
    """A password identity and its session: ``(session, identity id, username)``."""
    name = ziti_unique("mfa-user")
    identity_id = make_identity(name, password="pass-word", username=name)
    return ziti.signed_in(name, "pass-word", api="client"), identity_id, name


# -- enrollment ------------------------------------------------------------------------


def test_enroll_answers_201_with_the_current_identity_mfa_location(user):
    session, _, _ = user
    response = session.edge("POST", "/current-identity/mfa")
    assert response.status_code == 201
    data = response.json()["data"]
    assert data["_links"] == {"self": {"href": "./current-identity/mfa"}} and data["id"]


def test_unverified_status_shows_provisioning_url_and_twenty_recovery_codes(user):
    session, _, name = user
    status = start_enrollment(session)
    assert status["isVerified"] is False
    assert re.fullmatch(
        rf"otpauth://totp/openziti\.io:{re.escape(name)}\?issuer=openziti\.io&secret=[A-Z2-7]{{16}}",
        status["provisioningUrl"],
    )
    assert len(status["recoveryCodes"]) == 20 and len(set(status["recoveryCodes"])) == 20
    assert all(re.fullmatch(r"[A-Z2-7]{6}", c) for c in status["recoveryCodes"])
    assert {"self", "verify", "qr"} <= set(status["_links"])


@pytest.mark.parametrize("ziti_config", [Config(totp_issuer="acme.example")], ids=["acme"])
def test_issuer_comes_from_the_totp_issuer_setting(user):
    status = start_enrollment(user[0])
    assert status["provisioningUrl"].startswith("otpauth://totp/acme.example:")
    assert "issuer=acme.example&" in status["provisioningUrl"]


def test_enrolling_again_is_409_mfa_exists_before_and_after_verification(user, ziti_clock):
    session, _, _ = user
    start_enrollment(session)
    assert_error(session.edge("POST", "/current-identity/mfa"), 409, "MFA_EXISTS")
    secret = secret_of(session.edge_ok("GET", "/current-identity/mfa")["provisioningUrl"])
    session.edge_ok("POST", "/current-identity/mfa/verify", json={"code": code(secret, ziti_clock)})
    assert_error(session.edge("POST", "/current-identity/mfa"), 409, "MFA_EXISTS")


@pytest.mark.parametrize(
    "method, path, body",
    [
        ("GET", "/current-identity/mfa", None),
        ("GET", "/current-identity/mfa/qr-code", None),
        ("POST", "/current-identity/mfa/verify", {"code": "123456"}),
        ("DELETE", "/current-identity/mfa", None),
        ("GET", "/current-identity/mfa/recovery-codes", None),
        ("POST", "/current-identity/mfa/recovery-codes", {"code": "123456"}),
    ],
)
def test_mfa_operations_without_an_enrollment_are_404(user, method, path, body):
    assert_error(user[0].edge(method, path, json=body), 404, "NOT_FOUND")


def test_enroll_accepts_an_empty_json_body(user):
    response = user[0].edge("POST", "/current-identity/mfa", content=b"", headers={"content-type": "application/json"})
    assert response.status_code == 201


# -- verification ------------------------------------------------------------------------


def test_verify_marks_verified_hides_secrets_and_enables_mfa_on_the_identity(user, ziti_admin, ziti_clock):
    session, identity_id, _ = user
    enroll_verified(session, ziti_clock)
    status = session.edge_ok("GET", "/current-identity/mfa")
    assert status["isVerified"] is True
    assert "recoveryCodes" not in status and "provisioningUrl" not in status
    assert "recovery-codes" in status["_links"] and "verify" not in status["_links"]
    assert ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")["isMfaEnabled"] is True
    assert_error(session.edge("GET", "/current-identity/mfa/qr-code"), 404, "NOT_FOUND")
    assert_error(session.edge("POST", "/current-identity/mfa/verify", json={"code": "123456"}), 404, "NOT_FOUND")


def test_verify_rejects_wrong_empty_and_recovery_codes(user):
    session, _, _ = user
    status = start_enrollment(session)
    for bad in (WRONG, "", status["recoveryCodes"][0]):
        assert_error(session.edge("POST", "/current-identity/mfa/verify", json={"code": bad}), 400, "MFA_INVALID_TOKEN")
    assert_error(session.edge("POST", "/current-identity/mfa/verify", json={}), 400, "COULD_NOT_VALIDATE", "code")
    assert session.edge_ok("GET", "/current-identity/mfa")["isVerified"] is False


def test_codes_are_accepted_two_steps_either_side_of_the_clock(user, ziti_clock):
    session, _, _ = user
    secret = secret_of(start_enrollment(session)["provisioningUrl"])
    for steps in (-3, 3):
        response = session.edge("POST", "/current-identity/mfa/verify", json={"code": code(secret, ziti_clock, steps)})
        assert_error(response, 400, "MFA_INVALID_TOKEN")
    assert (
        session.edge("POST", "/current-identity/mfa/verify", json={"code": code(secret, ziti_clock, -2)}).status_code
        == 200
    )


def test_a_code_stops_working_when_the_clock_moves_three_steps(ziti, user, ziti_clock):
    session, _, name = user
    secret, _ = enroll_verified(session, ziti_clock)
    stale = code(secret, ziti_clock)
    ziti_clock.advance(seconds=90)
    partial = ziti.signed_in(name, "pass-word", api="client")
    assert_error(partial.edge("POST", "/authenticate/mfa", json={"code": stale}), 400, "MFA_INVALID_TOKEN")
    assert partial.edge("POST", "/authenticate/mfa", json={"code": code(secret, ziti_clock)}).status_code == 200


def test_qr_code_is_a_256_pixel_png_of_the_provisioning_url(user):
    session, _, _ = user
    url = start_enrollment(session)["provisioningUrl"]
    response = session.edge("GET", "/current-identity/mfa/qr-code")
    assert response.status_code == 200 and response.headers["content-type"] == "image/png"
    width, height, pixels = read_gray_png(response.content)
    assert (width, height) == (256, 256)
    expected = segno.make(url, error="m", boost_error=False)
    assert decode_modules(pixels, expected.symbol_size(border=4)[0]) == [
        list(r) for r in expected.matrix_iter(border=4)
    ]


# -- partial sessions --------------------------------------------------------------------


def test_login_after_verification_is_partial_until_authenticate_mfa(ziti, user, ziti_clock):
    session, _, name = user
    secret, _ = enroll_verified(session, ziti_clock)
    partial = ziti.signed_in(name, "pass-word", api="client")
    data = partial.edge_ok("GET", "/current-api-session")
    assert data["isMfaRequired"] is True and data["isMfaComplete"] is False and data["authQueries"] == [TOTP_QUERY]
    assert_error(partial.edge("GET", "/current-identity"), 401, "UNAUTHORIZED")
    assert partial.edge("POST", "/authenticate/mfa", json={"code": code(secret, ziti_clock)}).json() == {
        "data": {},
        "meta": {},
    }
    data = partial.edge_ok("GET", "/current-api-session")
    assert data["isMfaComplete"] is True and data["authQueries"] == []
    assert partial.edge("GET", "/current-identity").status_code == 200


def test_authenticate_reply_lists_the_totp_query(ziti, user, ziti_clock):
    session, _, name = user
    enroll_verified(session, ziti_clock)
    response = ziti.edge(
        "POST", "/authenticate", params={"method": "password"}, json={"username": name, "password": "pass-word"}
    )
    data = response.json()["data"]
    assert data["authQueries"] == [TOTP_QUERY] and data["isMfaRequired"] is True


@pytest.mark.parametrize(
    "method, path, allowed",
    [
        ("GET", "/current-api-session", True),
        ("GET", "/current-identity/mfa", True),
        ("POST", "/current-identity/mfa", True),
        ("GET", "/current-identity/mfa/qr-code", True),
        ("GET", "/current-identity", False),
        ("GET", "/current-identity/authenticators", False),
        ("DELETE", "/current-identity/mfa", False),
        ("GET", "/current-identity/mfa/recovery-codes", False),
        ("POST", "/current-api-session/totp-token", False),
        ("GET", "/controllers", False),
    ],
)
def test_partial_session_reaches_only_the_mfa_operations(ziti, user, ziti_clock, method, path, allowed):
    session, _, name = user
    enroll_verified(session, ziti_clock)
    partial = ziti.signed_in(name, "pass-word", api="client")
    response = partial.edge(method, path, json={"code": "123456"} if method == "POST" else None)
    if allowed:
        assert response.status_code != 401, response.text
    else:
        assert_error(response, 401, "UNAUTHORIZED")


def test_partial_session_can_log_out(ziti, user, ziti_clock):
    session, _, name = user
    enroll_verified(session, ziti_clock)
    partial = ziti.signed_in(name, "pass-word", api="client")
    assert partial.edge("DELETE", "/current-api-session").status_code == 200
    assert_error(partial.edge("GET", "/current-api-session"), 401, "UNAUTHORIZED")


def test_partial_session_expires_by_the_clock(ziti, user, ziti_clock):
    session, _, name = user
    secret, _ = enroll_verified(session, ziti_clock)
    partial = ziti.signed_in(name, "pass-word", api="client")
    ziti_clock.advance(minutes=31)
    assert_error(
        partial.edge("POST", "/authenticate/mfa", json={"code": code(secret, ziti_clock)}), 401, "UNAUTHORIZED"
    )


def test_authenticate_mfa_errors(ziti, user, ziti_clock):
    session, _, name = user
    assert_error(session.edge("POST", "/authenticate/mfa", json={"code": "123456"}), 409, "MFA_NOT_ENROLLED")
    enroll_verified(session, ziti_clock)
    partial = ziti.signed_in(name, "pass-word", api="client")
    assert_error(partial.edge("POST", "/authenticate/mfa", json={"code": WRONG}), 400, "MFA_INVALID_TOKEN")
    assert_error(partial.edge("POST", "/authenticate/mfa", json={"code": ""}), 400, "MFA_INVALID_TOKEN")
    assert_error(partial.edge("POST", "/authenticate/mfa", json={}), 400, "COULD_NOT_VALIDATE", "code")


def test_each_recovery_code_completes_one_login_only(ziti, user, ziti_clock):
    session, _, name = user
    secret, recovery = enroll_verified(session, ziti_clock)
    first = ziti.signed_in(name, "pass-word", api="client")
    assert first.edge("POST", "/authenticate/mfa", json={"code": recovery[0]}).status_code == 200
    second = ziti.signed_in(name, "pass-word", api="client")
    assert_error(second.edge("POST", "/authenticate/mfa", json={"code": recovery[0]}), 400, "MFA_INVALID_TOKEN")
    assert second.edge("POST", "/authenticate/mfa", json={"code": recovery[1]}).status_code == 200
    left = first.edge_ok(
        "GET", "/current-identity/mfa/recovery-codes", headers={"mfa-validation-code": code(secret, ziti_clock)}
    )
    assert left["recoveryCodes"] == recovery[2:]


def test_management_api_serves_the_same_mfa_flow(ziti, make_identity, ziti_unique, ziti_clock):
    name = ziti_unique("mgmt-mfa")
    make_identity(name, password="pass-word", username=name)
    session = ziti.signed_in(name, "pass-word")
    session.mgmt_ok("POST", "/current-identity/mfa")
    secret = secret_of(session.mgmt_ok("GET", "/current-identity/mfa")["provisioningUrl"])
    session.mgmt_ok("POST", "/current-identity/mfa/verify", json={"code": code(secret, ziti_clock)})
    partial = ziti.signed_in(name, "pass-word")
    assert_error(partial.mgmt("GET", "/current-identity"), 401, "UNAUTHORIZED")
    partial.mgmt_ok("POST", "/authenticate/mfa", json={"code": code(secret, ziti_clock)})
    assert partial.mgmt("GET", "/current-identity").status_code == 200


# -- recovery codes ------------------------------------------------------------------------


def test_recovery_codes_need_a_totp_code_in_the_body_or_header(ziti, user, ziti_clock):
    session, _, _ = user
    secret, recovery = enroll_verified(session, ziti_clock)
    path = "/current-identity/mfa/recovery-codes"
    by_header = session.edge_ok("GET", path, headers={"mfa-validation-code": code(secret, ziti_clock)})
    assert by_header["recoveryCodes"] == recovery and by_header["id"]
    by_body = session.edge("GET", path, json={"code": code(secret, ziti_clock)}, headers={"mfa-validation-code": WRONG})
    assert by_body.status_code == 200
    body_wins = session.edge(
        "GET", path, json={"code": WRONG}, headers={"mfa-validation-code": code(secret, ziti_clock)}
    )
    assert_error(body_wins, 400, "MFA_INVALID_TOKEN")
    assert_error(session.edge("GET", path), 400, "MFA_INVALID_TOKEN")
    assert_error(session.edge("GET", path, headers={"mfa-validation-code": recovery[0]}), 400, "MFA_INVALID_TOKEN")


def test_recovery_codes_of_an_unverified_enrollment_are_404(user):
    session, _, _ = user
    start_enrollment(session)
    assert_error(
        session.edge("GET", "/current-identity/mfa/recovery-codes", headers={"mfa-validation-code": "123456"}),
        404,
        "NOT_FOUND",
    )


def test_regenerating_replaces_every_recovery_code(ziti, user, ziti_clock):
    session, _, name = user
    secret, old = enroll_verified(session, ziti_clock)
    assert session.edge("POST", "/current-identity/mfa/recovery-codes", json={"code": WRONG}).status_code == 400
    assert session.edge("POST", "/current-identity/mfa/recovery-codes", json={"code": old[0]}).status_code == 200
    new = session.edge_ok(
        "GET", "/current-identity/mfa/recovery-codes", headers={"mfa-validation-code": code(secret, ziti_clock)}
    )["recoveryCodes"]
    assert len(new) == 20 and not set(new) & set(old)
    partial = ziti.signed_in(name, "pass-word", api="client")
    assert_error(partial.edge("POST", "/authenticate/mfa", json={"code": old[5]}), 400, "MFA_INVALID_TOKEN")
    assert partial.edge("POST", "/authenticate/mfa", json={"code": new[5]}).status_code == 200


# -- removal ------------------------------------------------------------------------------


def test_deleting_a_verified_enrollment_needs_a_code(ziti, user, ziti_admin, ziti_clock):
    session, identity_id, name = user
    secret, _ = enroll_verified(session, ziti_clock)
    assert_error(session.edge("DELETE", "/current-identity/mfa"), 400, "MFA_INVALID_TOKEN")
    assert_error(
        session.edge("DELETE", "/current-identity/mfa", headers={"mfa-validation-code": WRONG}),
        400,
        "MFA_INVALID_TOKEN",
    )
    response = session.edge(
        "DELETE", "/current-identity/mfa", headers={"mfa-validation-code": code(secret, ziti_clock)}
    )
    assert response.json() == {"data": {}, "meta": {}}
    assert_error(session.edge("GET", "/current-identity/mfa"), 404, "NOT_FOUND")
    assert ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")["isMfaEnabled"] is False
    fresh = ziti.signed_in(name, "pass-word", api="client")
    assert fresh.edge_ok("GET", "/current-api-session")["isMfaRequired"] is False


def test_a_recovery_code_also_deletes_a_verified_enrollment(user, ziti_clock):
    session, _, _ = user
    _, recovery = enroll_verified(session, ziti_clock)
    assert (
        session.edge("DELETE", "/current-identity/mfa", headers={"mfa-validation-code": recovery[3]}).status_code == 200
    )


def test_deleting_an_unverified_enrollment_needs_no_code(user):
    session, _, _ = user
    start_enrollment(session)
    assert session.edge("DELETE", "/current-identity/mfa").status_code == 200
    assert session.edge("POST", "/current-identity/mfa").status_code == 201


def test_admin_removes_an_identity_mfa(ziti, user, ziti_admin, ziti_clock):
    session, identity_id, name = user
    enroll_verified(session, ziti_clock)
    assert ziti_admin.mgmt("DELETE", f"/identities/{identity_id}/mfa").json() == {"data": {}, "meta": {}}
    assert_error(ziti_admin.mgmt("DELETE", f"/identities/{identity_id}/mfa"), 404, "NOT_FOUND")
    assert_error(ziti_admin.mgmt("DELETE", "/identities/no-such-identity/mfa"), 404, "NOT_FOUND")
    assert ziti.signed_in(name, "pass-word", api="client").edge("GET", "/current-identity").status_code == 200


def test_deleting_the_identity_deletes_its_mfa_record(user, ziti_admin, ziti_clock):
    session, identity_id, _ = user
    enroll_verified(session, ziti_clock)
    before = ziti_admin.mgmt_ok("GET", "/summary")["mfas"]
    ziti_admin.mgmt_ok("DELETE", f"/identities/{identity_id}")
    assert ziti_admin.mgmt_ok("GET", "/summary")["mfas"] == before - 1


def test_totp_token_needs_an_oidc_session(user):
    response = user[0].edge("POST", "/current-api-session/totp-token", json={"code": "123456"})
    assert_error(response, 400, "INVALID_BACKING_TOKEN_TYPE")


# -- PNG reading (independent of the controller's encoder) ------------------------------------


def read_gray_png(data: bytes) -> tuple[int, int, list[bytes]]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        chunk = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", chunk[:10])
            assert (depth, color) == (8, 0)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw = zlib.decompress(idat)
    rows = [raw[y * (width + 1) : (y + 1) * (width + 1)] for y in range(height)]
    assert all(row[0] == 0 for row in rows)  # no filters
    return width, height, [row[1:] for row in rows]


def decode_modules(pixels: list[bytes], modules: int) -> list[list[bool]]:
    scale = len(pixels) // modules
    offset = (len(pixels) - modules * scale) // 2
    centre = offset + scale // 2
    return [[pixels[centre + y * scale][centre + x * scale] < 128 for x in range(modules)] for y in range(modules)]
