"""Certificate login: which chains are trusted, which authenticator or claim names the identity."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from harness.client import pki as hp
from tests.support import (
    CLIENT,
    assert_error,
    cert_login,
    create_ca,
    enrolled,
    new_identity,
    ok,
    policy,
    session_of,
    third_party,
    verified_ca,
)


def attach_cert(cert_admin, identity_id: str, client: hp.CertKey) -> str:
    return cert_admin.create(
        "authenticators", {"identityId": identity_id, "method": "cert", "certPem": client.cert_pem}
    )


@pytest.mark.parametrize("path", ["/authenticate", CLIENT + "/authenticate", "/edge/management/v1/authenticate"])
def test_network_certificate_logs_in_at_every_authenticate_path(cert_admin, cert_api, make_cert_api, ziti_unique, path):
    identity_id, client = enrolled(cert_admin, cert_api, ziti_unique("paths"))
    response = cert_login(make_cert_api(client), path)
    data = ok(response)
    assert response.headers["zt-session"] == data["token"]
    assert data["identityId"] == identity_id and data["isCertExtendable"] is True
    assert (
        data["authenticatorId"]
        == cert_admin.mgmt_ok("GET", f"/identities/{identity_id}")["authenticators"]["cert"]["id"]
    )
    assert "improperClientCertChain" not in data and "ziti-authenticator-extend-requested" not in response.headers


def test_login_keeps_sdk_and_env_info(cert_admin, cert_api, make_cert_api, ziti_unique):
    identity_id, client = enrolled(cert_admin, cert_api, ziti_unique("info"))
    ok(cert_login(make_cert_api(client)))
    detail = cert_admin.mgmt_ok("GET", f"/identities/{identity_id}")
    assert detail["sdkInfo"]["type"] == "ziti-sdk-c" and detail["envInfo"]["os"] == "linux"


def test_leaf_without_its_intermediate_is_an_improper_chain(cert_admin, cert_api, make_cert_api, ziti_unique):
    identity_id, client = enrolled(cert_admin, cert_api, ziti_unique("improper"))
    data = ok(cert_login(make_cert_api(client, send_chain=False)))
    assert data["identityId"] == identity_id and data["improperClientCertChain"] is True


def test_no_certificate_is_invalid_auth(cert_api):
    assert_error(cert_login(cert_api), 401, "INVALID_AUTH")


def test_unknown_self_signed_certificate_is_invalid_auth(make_cert_api):
    stranger = hp.make_leaf(None, "stranger")
    assert_error(cert_login(make_cert_api(stranger)), 401, "INVALID_AUTH")


def test_deleted_authenticator_no_longer_logs_in(cert_admin, cert_api, make_cert_api, ziti_unique):
    identity_id, client = enrolled(cert_admin, cert_api, ziti_unique("deleted"))
    auth_id = cert_admin.mgmt_ok("GET", f"/identities/{identity_id}")["authenticators"]["cert"]["id"]
    cert_admin.mgmt_ok("DELETE", f"/authenticators/{auth_id}")
    assert_error(cert_login(make_cert_api(client)), 401, "INVALID_AUTH")


def test_disabled_identity_and_policy_without_cert_are_invalid_auth(cert_admin, cert_api, make_cert_api, ziti_unique):
    identity_id, client = enrolled(cert_admin, cert_api, ziti_unique("disabled"))
    cert_admin.mgmt_ok("POST", f"/identities/{identity_id}/disable", json={"durationMinutes": 0})
    assert_error(cert_login(make_cert_api(client)), 401, "INVALID_AUTH")
    cert_admin.mgmt_ok("POST", f"/identities/{identity_id}/enable")
    cert_admin.mgmt_ok(
        "PATCH",
        f"/identities/{identity_id}",
        json={"authPolicyId": policy(cert_admin, ziti_unique("nocert"), cert_allowed=False)},
    )
    assert_error(cert_login(make_cert_api(client)), 401, "INVALID_AUTH")


def test_third_party_chain_with_intermediate_logs_in_through_a_verified_auth_ca(
    cert_admin, make_cert_api, ziti_clock, ziti_unique
):
    root, inter = third_party(ziti_clock.now())
    verified_ca(cert_admin, ziti_unique("tp-ca"), root, ziti_clock.now(), isAuthEnabled=True)
    identity_id = new_identity(cert_admin, ziti_unique("tp-user"))
    client = hp.make_leaf(inter, "tp-user", now=ziti_clock.now())
    attach_cert(cert_admin, identity_id, client)

    data = ok(cert_login(make_cert_api(client)))
    assert data["identityId"] == identity_id and data["isCertExtendable"] is False
    # the intermediate is the client's to send: without it nothing chains to the CA
    assert_error(cert_login(make_cert_api(client, send_chain=False)), 401, "INVALID_AUTH")


def test_unverified_or_auth_disabled_ca_is_not_trusted(cert_admin, make_cert_api, ziti_clock, ziti_unique):
    root, inter = third_party(ziti_clock.now(), "Unverified")
    create_ca(cert_admin, ziti_unique("unverified"), root, isAuthEnabled=True)
    identity_id = new_identity(cert_admin, ziti_unique("unv-user"))
    client = hp.make_leaf(inter, "unv-user", now=ziti_clock.now())
    attach_cert(cert_admin, identity_id, client)
    assert_error(cert_login(make_cert_api(client)), 401, "INVALID_AUTH")

    other_root, other_inter = third_party(ziti_clock.now(), "No Auth")
    verified_ca(cert_admin, ziti_unique("noauth"), other_root, ziti_clock.now(), isAuthEnabled=False)
    other = hp.make_leaf(other_inter, "noauth-user", now=ziti_clock.now())
    attach_cert(cert_admin, new_identity(cert_admin, ziti_unique("noauth-user")), other)
    assert_error(cert_login(make_cert_api(other)), 401, "INVALID_AUTH")


def test_expired_certificate_depends_on_allow_expired_certs(cert_admin, make_cert_api, ziti_clock, ziti_unique):
    root, inter = third_party(ziti_clock.now(), "Expiry")
    verified_ca(cert_admin, ziti_unique("exp-ca"), root, ziti_clock.now(), isAuthEnabled=True)
    lenient = new_identity(cert_admin, ziti_unique("lenient"))
    strict = new_identity(
        cert_admin, ziti_unique("strict"), authPolicyId=policy(cert_admin, ziti_unique("strict"), allow_expired=False)
    )
    expired_a = hp.make_leaf(inter, "a", now=ziti_clock.now(), expired=True)
    expired_b = hp.make_leaf(inter, "b", now=ziti_clock.now(), expired=True)
    attach_cert(cert_admin, lenient, expired_a)
    attach_cert(cert_admin, strict, expired_b)

    assert ok(cert_login(make_cert_api(expired_a)))["identityId"] == lenient  # the default policy allows expired
    assert_error(cert_login(make_cert_api(expired_b)), 401, "INVALID_AUTH")


def test_network_certificate_expires_by_the_controller_clock(
    cert_admin, cert_api, make_cert_api, ziti_clock, ziti_unique
):
    ziti_clock.set(datetime.now(timezone.utc))  # issued certs are dated by real time
    cert_admin = make_cert_api().signed_in("admin", "admin")
    strict = policy(cert_admin, ziti_unique("strict-net"), allow_expired=False)
    identity_id, client = enrolled(cert_admin, cert_api, ziti_unique("net-expiry"), authPolicyId=strict)
    assert ok(cert_login(make_cert_api(client)))["identityId"] == identity_id
    ziti_clock.advance(timedelta(days=367).total_seconds())
    assert_error(cert_login(make_cert_api(client)), 401, "INVALID_AUTH")


def test_ca_external_id_claim_names_the_identity_without_an_authenticator(
    cert_admin, make_cert_api, ziti_clock, ziti_unique
):
    root, inter = third_party(ziti_clock.now(), "Claims")
    claim = {
        "location": "SAN_URI",
        "matcher": "SCHEME",
        "matcherCriteria": "spiffe",
        "parser": "NONE",
        "parserCriteria": "",
        "index": 0,
    }
    verified_ca(cert_admin, ziti_unique("claim-ca"), root, ziti_clock.now(), isAuthEnabled=True, externalIdClaim=claim)
    external_id = f"spiffe://example.test/device/{ziti_unique('dev')}"
    identity_id = new_identity(cert_admin, ziti_unique("claimed"), externalId=external_id)
    # two different certificates carrying the same claim: no fingerprint is pinned
    for cn in ("first", "rotated"):
        client = hp.make_leaf(inter, cn, now=ziti_clock.now(), uris=[external_id])
        data = ok(cert_login(make_cert_api(client)))
        assert data["identityId"] == identity_id and data["authenticatorId"] == "internal"
    no_claim = hp.make_leaf(inter, "no-claim", now=ziti_clock.now())
    assert_error(cert_login(make_cert_api(no_claim)), 401, "INVALID_AUTH")


def test_requested_extension_surfaces_on_the_session_and_header(cert_admin, cert_api, make_cert_api, ziti_unique):
    identity_id, client = enrolled(cert_admin, cert_api, ziti_unique("flagged"))
    auth_id = cert_admin.mgmt_ok("GET", f"/identities/{identity_id}")["authenticators"]["cert"]["id"]
    cert_admin.mgmt_ok("POST", f"/authenticators/{auth_id}/request-extend", json={"rollKeys": True})
    response = cert_login(make_cert_api(client))
    data = ok(response)
    assert response.headers["ziti-authenticator-extend-requested"] == "true"
    assert data["isCertExtendRequested"] is True and data["isCertKeyRollRequested"] is True
    current = session_of(make_cert_api(client), response).edge_ok("GET", "/current-api-session")
    assert current["isCertExtendRequested"] is True
