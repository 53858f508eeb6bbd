"""The public enrollment endpoints: EST CA bundle, network JWTs, JWKS, challenge, token enrollment."""

from __future__ import annotations

import base64
import uuid

import jwt
import pytest

from harness.client import pki as hp
from harness.client.enroll import parse_cacerts
from tests.support import CLIENT, CONTROLLER_URL, assert_error

MGMT = "/edge/management/v1"


@pytest.mark.parametrize(
    "path", ["/.well-known/est/cacerts", CLIENT + "/.well-known/est/cacerts", MGMT + "/.well-known/est/cacerts"]
)
def test_cacerts_is_base64_pkcs7_in_64_character_lines(ziti, path):
    response = ziti.request("GET", path, headers={"accept": "application/json"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/pkcs7-mime")
    assert response.headers["content-transfer-encoding"] == "base64"
    lines = response.text.split("\n")
    assert all(len(line) == 64 for line in lines[:-1]) and 0 < len(lines[-1]) <= 64
    assert not response.text.endswith("\n")
    certs = parse_cacerts(response.text)
    assert any(c.subject == c.issuer for c in certs) and len(certs) >= 2


@pytest.mark.parametrize("prefix", [CLIENT, MGMT])
def test_network_jwts_are_public_and_signed_like_enrollment_jwts(ziti, prefix):
    body = ziti.request("GET", prefix + "/network-jwts").json()
    assert body["meta"] == {} and [item["name"] for item in body["data"]] == ["default"]
    token = body["data"][0]["token"]
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["em"] == "network" and claims["iss"] == claims["sub"] == CONTROLLER_URL + "/"
    assert claims["aud"] == ["openziti-enroller"] and "exp" not in claims
    key = jwt.PyJWK(ziti.request("GET", CLIENT + "/enroll/jwks").json()["keys"][0]).key
    jwt.decode(token, key, algorithms=[jwt.get_unverified_header(token)["alg"]], audience="openziti-enroller")


def test_jwks_lists_public_keys_only(ziti):
    response = ziti.request("GET", CLIENT + "/enroll/jwks")
    assert response.status_code == 200 and set(response.json()) == {"keys"}
    [key] = response.json()["keys"]
    assert key["kty"] in ("EC", "RSA") and key["use"] == "sig" and len(key["kid"]) == 40
    assert "d" not in key and "p" not in key and "q" not in key
    assert base64.b64decode(key["x5c"][0])


def test_challenge_signs_the_nonce_with_the_enrollment_key(ziti):
    [key] = ziti.request("GET", CLIENT + "/enroll/jwks").json()["keys"]
    nonce = str(uuid.uuid4())
    response = ziti.request("POST", CLIENT + "/enroll/challenge", json={"nonce": nonce, "keyId": key["kid"]})
    assert response.status_code == 200
    data = response.json()
    assert set(data) == {"signature", "algorithm", "kid", "caPool"} and data["kid"] == key["kid"]
    assert "BEGIN CERTIFICATE" in data["caPool"]
    signature = base64.urlsafe_b64decode(data["signature"] + "=" * (-len(data["signature"]) % 4))
    algorithm = jwt.get_algorithm_by_name(data["algorithm"])
    assert algorithm.verify(nonce.encode(), jwt.PyJWK(key).key, signature)


@pytest.mark.parametrize(
    "body, field",
    [
        ({"nonce": "not-a-uuid", "keyId": "x"}, "nonce"),
        ({"nonce": str(uuid.uuid4()), "keyId": "unknown"}, "keyId"),
        ({"nonce": str(uuid.uuid4())}, "keyId"),
    ],
)
def test_challenge_rejects_bad_nonces_and_unknown_keys(ziti, body, field):
    assert_error(ziti.request("POST", CLIENT + "/enroll/challenge", json=body), 400, "COULD_NOT_VALIDATE", field)


def test_token_enrollment_without_a_valid_bearer_is_an_invalid_token(ziti):
    response = ziti.request("POST", CLIENT + "/enroll/token", json={}, headers={"Authorization": "Bearer eyJ.a.b"})
    assert_error(response, 400, "INVALID_ENROLLMENT_TOKEN")
    assert_error(ziti.request("POST", CLIENT + "/enroll/token", json={}), 400, "INVALID_ENROLLMENT_TOKEN")


def test_enrollment_paths_are_client_api_only(ziti):
    assert ziti.request("POST", MGMT + "/enroll", params={"method": "ott", "token": "x"}, json={}).status_code == 404


def make_signer(ziti_admin, unique, clock, **flags):
    """An external JWT signer with a local key: ``(signer id, issuer, key, kid)``."""
    key_pair = hp.make_leaf(None, "issuer", now=clock.now())
    issuer, kid = f"https://idp.example.test/{unique('idp')}", unique("kid")
    signer_id = ziti_admin.create(
        "external-jwt-signers",
        {
            "name": unique("signer"),
            "enabled": True,
            "issuer": issuer,
            "audience": "ziti",
            "certPem": key_pair.cert_pem,
            "kid": kid,
            "claimsProperty": "sub",
            "useExternalId": True,
            "enrollNameClaimsSelector": "/name",
            "enrollAttributeClaimsSelector": "/groups",
            **flags,
        },
    )
    return signer_id, issuer, key_pair.key, kid


def bearer(issuer, key, kid, clock, **claims):
    body = {"iss": issuer, "aud": "ziti", "exp": int(clock.now().timestamp()) + 600, **claims}
    return "Bearer " + jwt.encode(body, key, algorithm="ES256", headers={"kid": kid})


def test_token_enrollment_creates_an_identity_from_the_external_jwt(ziti_admin, ziti, ziti_clock, ziti_unique):
    _, issuer, key, kid = make_signer(
        ziti_admin, ziti_unique, ziti_clock, enrollToTokenEnabled=True, enrollToCertEnabled=True
    )
    subject, name = ziti_unique("ext-sub"), ziti_unique("ext-name")
    token = bearer(issuer, key, kid, ziti_clock, sub=subject, name=name, groups=["staff", "vpn"])
    response = ziti.request("POST", CLIENT + "/enroll/token", json={}, headers={"Authorization": token})
    assert response.status_code == 200 and response.json()["data"] == {}
    [created] = ziti_admin.mgmt_ok("GET", "/identities", params={"filter": f'name = "{name}"'})
    assert created["externalId"] == subject and created["roleAttributes"] == ["staff", "vpn"]
    again = ziti.request("POST", CLIENT + "/enroll/token", json={}, headers={"Authorization": token})
    assert_error(again, 409, "ENROLLMENT_IDENTITY_ALREADY_ENROLLED")

    csr, _ = hp.make_csr("ignored")
    other = bearer(issuer, key, kid, ziti_clock, sub=ziti_unique("ext-sub"), name=ziti_unique("ext-cert"))
    response = ziti.request(
        "POST", CLIENT + "/enroll/token", json={"clientCsr": hp.csr_pem(csr)}, headers={"Authorization": other}
    )
    data = response.json()["data"]
    assert response.status_code == 200 and "BEGIN CERTIFICATE" in data["cert"] and "BEGIN CERTIFICATE" in data["ca"]


def test_token_enrollment_follows_the_signer_flags(ziti_admin, ziti, ziti_clock, ziti_unique):
    _, issuer, key, kid = make_signer(
        ziti_admin, ziti_unique, ziti_clock, enrollToTokenEnabled=False, enrollToCertEnabled=False
    )
    token = bearer(issuer, key, kid, ziti_clock, sub=ziti_unique("s"), name=ziti_unique("n"))
    assert_error(
        ziti.request("POST", CLIENT + "/enroll/token", json={}, headers={"Authorization": token}),
        409,
        "INVALID_ENROLLMENT_NOT_ALLOWED",
    )
    expired = bearer(
        issuer,
        key,
        kid,
        ziti_clock,
        sub=ziti_unique("s"),
        name=ziti_unique("n"),
        exp=int(ziti_clock.now().timestamp()) - 1,
    )
    assert_error(
        ziti.request("POST", CLIENT + "/enroll/token", json={}, headers={"Authorization": expired}),
        400,
        "INVALID_ENROLLMENT_TOKEN",
    )
