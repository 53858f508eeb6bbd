"""Third-party CAs on the management API: CRUD, verification, JWT, delete cascade."""

from __future__ import annotations

import jwt
import pytest

from harness.client import pki as hp
from tests.support import CONTROLLER_URL, assert_error, create_ca, new_identity, ok, verify_ca


@pytest.fixture
def root(ziti_clock):
    return hp.make_root_ca("CA Tests Root", now=ziti_clock.now())


def test_created_ca_is_unverified_with_a_token_and_fingerprint(ziti_admin, root, ziti_unique):
    ca_id = create_ca(ziti_admin, ziti_unique("ca"), root, identityRoles=["a"])
    data = ziti_admin.mgmt_ok("GET", f"/cas/{ca_id}")
    assert data["isVerified"] is False and data["verificationToken"]
    assert data["fingerprint"] == root.fingerprint and data["certPem"] == root.cert_pem
    assert data["identityNameFormat"] == "[caName]-[commonName]" and data["identityRoles"] == ["a"]
    assert "externalIdClaim" not in data and data["isAuthEnabled"] is False
    listed = ziti_admin.mgmt("GET", "/cas", params={"filter": f'id = "{ca_id}"'}).json()
    assert [c["id"] for c in listed["data"]] == [ca_id]
    assert {"isVerified", "fingerprint", "isAuthEnabled"} <= set(listed["meta"]["filterableFields"])


def test_non_ca_certificate_is_400_not_500(ziti_admin, ziti_clock, ziti_unique):
    leaf = hp.make_leaf(hp.make_root_ca(now=ziti_clock.now()), "leaf", now=ziti_clock.now())
    body = {
        "name": ziti_unique("leafca"),
        "certPem": leaf.cert_pem,
        "isAutoCaEnrollmentEnabled": False,
        "isOttCaEnrollmentEnabled": False,
        "isAuthEnabled": False,
        "identityRoles": [],
    }
    assert_error(ziti_admin.mgmt("POST", "/cas", json=body), 400, "CERTIFICATE_IS_NOT_CA")


@pytest.mark.parametrize("pem", ["garbage", "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n"])
def test_unparsable_cert_pem_is_a_field_error(ziti_admin, ziti_unique, pem):
    body = {
        "name": ziti_unique("bad"),
        "certPem": pem,
        "isAutoCaEnrollmentEnabled": False,
        "isOttCaEnrollmentEnabled": False,
        "isAuthEnabled": False,
        "identityRoles": [],
    }
    assert_error(ziti_admin.mgmt("POST", "/cas", json=body), 400, "COULD_NOT_VALIDATE", "certPem")


def test_same_certificate_twice_is_a_field_error(ziti_admin, root, ziti_unique):
    create_ca(ziti_admin, ziti_unique("first"), root)
    body = {
        "name": ziti_unique("second"),
        "certPem": root.cert_pem,
        "isAutoCaEnrollmentEnabled": False,
        "isOttCaEnrollmentEnabled": False,
        "isAuthEnabled": False,
        "identityRoles": [],
    }
    assert_error(ziti_admin.mgmt("POST", "/cas", json=body), 400, "COULD_NOT_VALIDATE", "certPem")


def test_missing_required_fields_are_400(ziti_admin, root):
    assert_error(
        ziti_admin.mgmt("POST", "/cas", json={"name": "x", "certPem": root.cert_pem}), 400, "COULD_NOT_VALIDATE"
    )


def test_verification_with_the_token_as_common_name(ziti_admin, root, ziti_clock, ziti_unique):
    ca_id = create_ca(ziti_admin, ziti_unique("verify"), root)
    response = verify_ca(ziti_admin, ca_id, root, ziti_clock.now())
    assert response.status_code == 200 and response.json() == {"data": {}, "meta": {}}
    assert ziti_admin.mgmt_ok("GET", f"/cas/{ca_id}")["isVerified"] is True
    assert_error(verify_ca(ziti_admin, ca_id, root, ziti_clock.now()), 409, "CA_ALREADY_VERIFIED")


def post_verify(ziti_admin, ca_id, text):
    return ziti_admin.mgmt(
        "POST", f"/cas/{ca_id}/verify", content=text.encode(), headers={"content-type": "text/plain"}
    )


def test_verification_errors_have_the_real_codes(ziti_admin, root, ziti_clock, ziti_unique):
    ca_id = create_ca(ziti_admin, ziti_unique("errors"), root)
    token = ziti_admin.mgmt_ok("GET", f"/cas/{ca_id}")["verificationToken"]
    assert_error(post_verify(ziti_admin, ca_id, "not pem"), 400, "COULD_NOT_PARSE_BODY")
    csr, _ = hp.make_csr(token)
    assert_error(post_verify(ziti_admin, ca_id, hp.csr_pem(csr)), 400, "EXPECTED_PEM_CERTIFICATE")
    assert_error(
        post_verify(ziti_admin, ca_id, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
        400,
        "COULD_NOT_PARSE_DER_BLOCK",
    )
    assert_error(
        post_verify(ziti_admin, ca_id, hp.make_leaf(root, "wrong-cn", now=ziti_clock.now()).cert_pem),
        400,
        "INVALID_COMMON_NAME",
    )
    other_root = hp.make_root_ca("Other", now=ziti_clock.now())
    assert_error(
        post_verify(ziti_admin, ca_id, hp.make_leaf(other_root, token, now=ziti_clock.now()).cert_pem),
        400,
        "CERTIFICATE_FAILED_VALIDATION",
    )
    assert_error(
        ziti_admin.mgmt("POST", "/cas/nope/verify", content=b"x", headers={"content-type": "text/plain"}),
        404,
        "NOT_FOUND",
    )
    assert ziti_admin.mgmt_ok("GET", f"/cas/{ca_id}")["isVerified"] is False


def test_is_verified_cannot_be_set_by_put_or_patch(ziti_admin, root, ziti_unique):
    ca_id = create_ca(ziti_admin, ziti_unique("sneaky"), root)
    ziti_admin.mgmt_ok("PATCH", f"/cas/{ca_id}", json={"isVerified": True, "isAuthEnabled": True})
    name = ziti_unique("renamed")
    ziti_admin.mgmt_ok(
        "PUT",
        f"/cas/{ca_id}",
        json={
            "name": name,
            "isVerified": True,
            "isAutoCaEnrollmentEnabled": True,
            "isOttCaEnrollmentEnabled": False,
            "isAuthEnabled": True,
            "identityRoles": [],
            "identityNameFormat": "",
        },
    )
    data = ziti_admin.mgmt_ok("GET", f"/cas/{ca_id}")
    assert data["isVerified"] is False and data["name"] == name and data["isAutoCaEnrollmentEnabled"] is True
    assert data["identityNameFormat"] == "[caName]-[commonName]" and data["certPem"] == root.cert_pem


def test_external_id_claim_is_validated_and_patched_by_subfield(ziti_admin, root, ziti_unique):
    bad = {
        "location": "SAN_URI",
        "matcher": "PREFIX",
        "matcherCriteria": "x",
        "parser": "NONE",
        "parserCriteria": "",
        "index": 0,
    }
    body = {
        "name": ziti_unique("claim"),
        "certPem": root.cert_pem,
        "isAutoCaEnrollmentEnabled": False,
        "isOttCaEnrollmentEnabled": False,
        "isAuthEnabled": False,
        "identityRoles": [],
        "externalIdClaim": bad,
    }
    assert_error(ziti_admin.mgmt("POST", "/cas", json=body), 400, "COULD_NOT_VALIDATE", "externalIdClaim")
    body["externalIdClaim"] = {**bad, "matcher": "SCHEME", "matcherCriteria": "spiffe"}
    ca_id = ziti_admin.create("cas", body)
    ziti_admin.mgmt_ok(
        "PATCH", f"/cas/{ca_id}", json={"externalIdClaim": {"parser": "SPLIT", "parserCriteria": "/", "index": 2}}
    )
    claim = ziti_admin.mgmt_ok("GET", f"/cas/{ca_id}")["externalIdClaim"]
    assert claim == {
        "location": "SAN_URI",
        "matcher": "SCHEME",
        "matcherCriteria": "spiffe",
        "parser": "SPLIT",
        "parserCriteria": "/",
        "index": 2,
    }
    assert_error(
        ziti_admin.mgmt("PATCH", f"/cas/{ca_id}", json={"externalIdClaim": {"index": -1}}),
        400,
        "COULD_NOT_VALIDATE",
        "externalIdClaim.index",
    )


def test_ca_jwt_is_plain_text_with_the_ca_claims(ziti_admin, ziti, root, ziti_unique):
    ca_id = create_ca(ziti_admin, ziti_unique("jwt"), root)
    response = ziti_admin.mgmt("GET", f"/cas/{ca_id}/jwt")
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/jwt")
    claims = jwt.decode(response.text, options={"verify_signature": False})
    assert claims["em"] == "ca" and claims["sub"] == claims["jti"] == ca_id
    assert claims["iss"] == CONTROLLER_URL + "/" and claims["aud"] == ["openziti-enroller"] and "exp" not in claims
    key = jwt.PyJWK(ziti.request("GET", "/edge/client/v1/enroll/jwks").json()["keys"][0]).key
    jwt.decode(
        response.text, key, algorithms=[jwt.get_unverified_header(response.text)["alg"]], audience="openziti-enroller"
    )
    assert_error(ziti_admin.mgmt("GET", "/cas/nope/jwt"), 404, "NOT_FOUND")


def test_delete_removes_the_cas_enrollments_and_certificate_authenticators(ziti_admin, root, ziti_clock, ziti_unique):
    ca_id = create_ca(ziti_admin, ziti_unique("doomed"), root)
    inter = hp.make_intermediate_ca(root, now=ziti_clock.now())
    holder = new_identity(ziti_admin, ziti_unique("holder"))
    by_chain = ziti_admin.create(
        "authenticators",
        {"identityId": holder, "method": "cert", "certPem": hp.make_leaf(inter, "h", now=ziti_clock.now()).chain_pem},
    )
    pending_id = new_identity(ziti_admin, ziti_unique("pending"), {"ottca": ca_id})
    bystander = new_identity(ziti_admin, ziti_unique("bystander"))
    unrelated = ziti_admin.create(
        "authenticators", {"identityId": bystander, "method": "cert", "certPem": hp.make_leaf(None, "self").cert_pem}
    )

    ziti_admin.mgmt_ok("DELETE", f"/cas/{ca_id}")
    assert_error(ziti_admin.mgmt("GET", f"/authenticators/{by_chain}"), 404, "NOT_FOUND")
    assert ziti_admin.mgmt_ok("GET", f"/identities/{pending_id}")["enrollment"] == {}
    assert ok(ziti_admin.mgmt("GET", f"/authenticators/{unrelated}"))["id"] == unrelated
    assert_error(ziti_admin.mgmt("GET", f"/cas/{ca_id}"), 404, "NOT_FOUND")
