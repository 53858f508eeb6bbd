"""Enrollment with third-party CA certificates: OTT-CA (pre-created identity) and auto enrollment."""

from __future__ import annotations

from harness.client import pki as hp
from harness.dataplane import flows
from tests.support import (
    CLIENT,
    assert_error,
    cert_login,
    create_ca,
    new_identity,
    ok,
    pending,
    third_party,
    verified_ca,
)


def enroll(ziti, method: str, token: str | None = None, path: str = CLIENT + "/enroll", **body):
    params = {"method": method, **({"token": token} if token else {})}
    return ziti.request("POST", path, params=params, json=body or None)


def identities_named(cert_admin, prefix: str) -> list[dict]:
    return cert_admin.mgmt_ok("GET", "/identities", params={"filter": f'name contains "{prefix}"', "limit": 100})


def test_ottca_enrolls_the_presented_certificate(cert_admin, make_cert_api, ziti_clock, ziti_unique):
    root, inter = third_party(ziti_clock.now(), "OttCa")
    ca_id = verified_ca(
        cert_admin, ziti_unique("ottca-ca"), root, ziti_clock.now(), isOttCaEnrollmentEnabled=True, isAuthEnabled=True
    )
    identity_id = new_identity(cert_admin, ziti_unique("ottca"), {"ottca": ca_id})
    client = hp.make_leaf(inter, "ottca-device", now=ziti_clock.now())
    token = pending(cert_admin, identity_id, "ottca")["token"]

    assert ok(enroll(make_cert_api(client), "ottca", token)) == {}
    detail = cert_admin.mgmt_ok("GET", f"/identities/{identity_id}")
    assert detail["enrollment"] == {} and detail["authenticators"]["cert"]["fingerprint"] == client.fingerprint
    auth = cert_admin.mgmt_ok("GET", f"/authenticators/{detail['authenticators']['cert']['id']}")
    assert auth["isIssuedByNetwork"] is False
    assert ok(cert_login(make_cert_api(client)))["identityId"] == identity_id
    assert_error(enroll(make_cert_api(client), "ottca", token), 400, "INVALID_ENROLLMENT_TOKEN")


def test_ottca_explicit_path_takes_the_token_in_the_body(cert_admin, make_cert_api, ziti_clock, ziti_unique):
    root, inter = third_party(ziti_clock.now(), "OttCa Explicit")
    ca_id = verified_ca(cert_admin, ziti_unique("ottca-x"), root, ziti_clock.now(), isOttCaEnrollmentEnabled=True)
    identity_id = new_identity(cert_admin, ziti_unique("ottca-x"), {"ottca": ca_id})
    client = hp.make_leaf(inter, "x", now=ziti_clock.now())
    response = make_cert_api(client).request(
        "POST", CLIENT + "/enroll/ottca", json={"token": pending(cert_admin, identity_id, "ottca")["token"]}
    )
    assert ok(response) == {}


def test_ottca_refuses_foreign_certs_disabled_cas_and_used_certs(cert_admin, make_cert_api, ziti_clock, ziti_unique):
    root, inter = third_party(ziti_clock.now(), "OttCa Rules")
    ca_id = verified_ca(cert_admin, ziti_unique("rules-ca"), root, ziti_clock.now(), isOttCaEnrollmentEnabled=True)
    identity_id = new_identity(cert_admin, ziti_unique("rules"), {"ottca": ca_id})
    token = pending(cert_admin, identity_id, "ottca")["token"]
    _, foreign_inter = third_party(ziti_clock.now(), "Foreign")
    foreign = hp.make_leaf(foreign_inter, "foreign", now=ziti_clock.now())
    assert_error(enroll(make_cert_api(foreign), "ottca", token), 400, "CERTIFICATE_FAILED_VALIDATION")
    assert_error(enroll(make_cert_api(), "ottca", token), 400, "CERTIFICATE_FAILED_VALIDATION")
    server_only = hp.make_leaf(inter, "server-only", now=ziti_clock.now(), eku=("serverAuth",))
    assert_error(enroll(make_cert_api(server_only), "ottca", token), 400, "CERTIFICATE_FAILED_VALIDATION")

    used = hp.make_leaf(inter, "used", now=ziti_clock.now())
    cert_admin.create(
        "authenticators",
        {"identityId": new_identity(cert_admin, ziti_unique("holder")), "method": "cert", "certPem": used.cert_pem},
    )
    error = assert_error(enroll(make_cert_api(used), "ottca", token), 409, "CERT_IN_USE")
    assert error["cause"]["data"]["fingerprint"] == used.fingerprint

    cert_admin.mgmt_ok("PATCH", f"/cas/{ca_id}", json={"isOttCaEnrollmentEnabled": False})
    fresh = hp.make_leaf(inter, "fresh", now=ziti_clock.now())
    assert_error(enroll(make_cert_api(fresh), "ottca", token), 400, "ENROLLMENT_CA_NOT_VALID")


def test_auto_enrollment_creates_a_named_identity_with_the_ca_roles(cert_admin, make_cert_api, ziti_clock, ziti_unique):
    root, inter = third_party(ziti_clock.now(), "Auto")
    ca_name = ziti_unique("auto-ca")
    verified_ca(
        cert_admin,
        ca_name,
        root,
        ziti_clock.now(),
        isAutoCaEnrollmentEnabled=True,
        isAuthEnabled=True,
        identityRoles=["sensors", "fleet"],
    )
    client = hp.make_leaf(inter, "device-7", now=ziti_clock.now())

    assert ok(enroll(make_cert_api(client), "ca")) == {}
    [created] = identities_named(cert_admin, ca_name)
    assert created["name"] == f"{ca_name}-device-7" and created["roleAttributes"] == ["sensors", "fleet"]
    assert created["isAdmin"] is False and created["typeId"] == "Default"
    assert created["authenticators"]["cert"]["fingerprint"] == client.fingerprint
    assert ok(cert_login(make_cert_api(client)))["identityId"] == created["id"]
    error = assert_error(enroll(make_cert_api(client), "ca"), 409, "CERT_IN_USE")
    assert error["cause"]["data"]["fingerprint"] == client.fingerprint


def test_auto_enrollment_name_clash_appends_a_six_digit_counter(cert_admin, make_cert_api, ziti_clock, ziti_unique):
    root, inter = third_party(ziti_clock.now(), "Clash")
    ca_name = ziti_unique("clash-ca")
    verified_ca(cert_admin, ca_name, root, ziti_clock.now(), isAutoCaEnrollmentEnabled=True)
    for _ in range(3):
        ok(enroll(make_cert_api(hp.make_leaf(inter, "same-cn", now=ziti_clock.now())), "ca"))
    names = sorted(i["name"] for i in identities_named(cert_admin, ca_name))
    assert names == [f"{ca_name}-same-cn", f"{ca_name}-same-cn000001", f"{ca_name}-same-cn000002"]


def test_requested_name_is_honoured_only_by_the_generic_path(cert_admin, make_cert_api, ziti_clock, ziti_unique):
    root, inter = third_party(ziti_clock.now(), "Requested")
    ca_name = ziti_unique("req-ca")
    verified_ca(
        cert_admin,
        ca_name,
        root,
        ziti_clock.now(),
        isAutoCaEnrollmentEnabled=True,
        identityNameFormat="[caName].[requestedName]",
    )
    ok(enroll(make_cert_api(hp.make_leaf(inter, "a", now=ziti_clock.now())), "ca", name="kiosk"))
    response = make_cert_api(hp.make_leaf(inter, "b", now=ziti_clock.now())).request(
        "POST", CLIENT + "/enroll/ca", json={"name": "ignored"}
    )
    assert ok(response) == {}
    names = {i["name"] for i in identities_named(cert_admin, ca_name)}
    assert f"{ca_name}.kiosk" in names and f"{ca_name}.ignored" not in names and len(names) == 2


def test_auto_enrollment_with_an_external_id_claim(cert_admin, make_cert_api, ziti_clock, ziti_unique):
    root, inter = third_party(ziti_clock.now(), "Auto Claim")
    ca_name = ziti_unique("claim-ca")
    claim = {
        "location": "SAN_EMAIL",
        "matcher": "SUFFIX",
        "matcherCriteria": "@example.test",
        "parser": "SPLIT",
        "parserCriteria": "@",
        "index": 0,
    }
    verified_ca(
        cert_admin,
        ca_name,
        root,
        ziti_clock.now(),
        isAutoCaEnrollmentEnabled=True,
        isAuthEnabled=True,
        externalIdClaim=claim,
    )
    user = ziti_unique("alice")
    client = hp.make_leaf(inter, "alice", now=ziti_clock.now(), emails=[f"{user}@example.test"])

    ok(enroll(make_cert_api(client), "ca"))
    [created] = identities_named(cert_admin, ca_name)
    assert created["externalId"] == user and created["authenticators"] == {}
    data = ok(cert_login(make_cert_api(client)))
    assert data["identityId"] == created["id"] and data["authenticatorId"] == "internal"
    assert_error(
        enroll(
            make_cert_api(hp.make_leaf(inter, "alice2", now=ziti_clock.now(), emails=[f"{user}@example.test"])), "ca"
        ),
        400,
        "COULD_NOT_VALIDATE",
        "externalId",
    )
    no_claim = hp.make_leaf(inter, "nobody", now=ziti_clock.now())
    assert_error(enroll(make_cert_api(no_claim), "ca"), 400, "MISSING_CERT_CLAIM")


def test_auto_enrollment_needs_a_verified_enabled_ca(cert_admin, make_cert_api, ziti_clock, ziti_unique):
    root, inter = third_party(ziti_clock.now(), "Needs")
    client = hp.make_leaf(inter, "needs", now=ziti_clock.now())
    if not cert_admin.mgmt_ok("GET", "/cas"):
        assert_error(enroll(make_cert_api(client), "ca"), 400, "ENROLLMENT_NO_VALID_CAS")
    ca_id = create_ca(cert_admin, ziti_unique("needs-ca"), root, isAutoCaEnrollmentEnabled=True)
    assert_error(enroll(make_cert_api(client), "ca"), 400, "CERT_FAILED_VALIDATION")  # not verified yet
    assert_error(enroll(make_cert_api(), "ca"), 400, "CERT_FAILED_VALIDATION")  # no certificate
    cert_admin.mgmt_ok("PATCH", f"/cas/{ca_id}", json={"isAutoCaEnrollmentEnabled": False})
    ok(
        cert_admin.mgmt(
            "POST",
            f"/cas/{ca_id}/verify",
            content=hp.make_leaf(
                root, cert_admin.mgmt_ok("GET", f"/cas/{ca_id}")["verificationToken"], now=ziti_clock.now()
            ).cert_pem,
            headers={"content-type": "text/plain"},
        )
    )
    assert_error(enroll(make_cert_api(client), "ca"), 400, "CERT_FAILED_VALIDATION")  # verified, auto disabled
    expired = hp.make_leaf(inter, "expired", now=ziti_clock.now(), expired=True)
    cert_admin.mgmt_ok("PATCH", f"/cas/{ca_id}", json={"isAutoCaEnrollmentEnabled": True})
    assert_error(enroll(make_cert_api(expired), "ca"), 400, "CERT_FAILED_VALIDATION")  # outside its validity
    assert ok(enroll(make_cert_api(client), "ca")) == {}


def test_the_harness_flows_enroll_by_ottca_and_by_ca(cert_admin, make_cert_api, ziti_clock, ziti_unique):
    root, inter = third_party(ziti_clock.now(), "Flows")
    ca_name = ziti_unique("flows-ca")
    ca_id = verified_ca(
        cert_admin, ca_name, root, ziti_clock.now(), isOttCaEnrollmentEnabled=True, isAutoCaEnrollmentEnabled=True
    )
    identity_id = new_identity(cert_admin, ziti_unique("flows-ottca"), {"ottca": ca_id})
    by_ottca = hp.make_leaf(inter, "flows-ottca-device", now=ziti_clock.now())
    by_ca = hp.make_leaf(inter, "flows-ca-device", now=ziti_clock.now())

    flows.enroll_ottca(make_cert_api(by_ottca), pending(cert_admin, identity_id, "ottca")["jwt"])
    flows.enroll_ca(make_cert_api(by_ca))

    detail = cert_admin.mgmt_ok("GET", f"/identities/{identity_id}")
    assert detail["authenticators"]["cert"]["fingerprint"] == by_ottca.fingerprint
    [created] = identities_named(cert_admin, ca_name)
    assert created["authenticators"]["cert"]["fingerprint"] == by_ca.fingerprint
