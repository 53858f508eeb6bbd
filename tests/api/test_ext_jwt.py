"""External JWT signers: management CRUD, client listing, ext-jwt primary login and its failures."""

from __future__ import annotations

import pytest

from harness.dataplane import flows
from tests.api.jwt_support import SigningKey, claims, ext_jwt_login, signer_body
from tests.support import assert_error


@pytest.fixture(scope="module")
def ec_key():
    return SigningKey("kid-ec-1")


@pytest.fixture
def signer(ziti_admin, jwks_server, ec_key, ziti_unique):
    """An enabled JWKS signer publishing ``ec_key``: ``(signer id, issuer, jwks path)``."""
    name = ziti_unique("signer")
    path = f"/{name}/jwks.json"
    issuer = f"https://{name}.idp.example"
    signer_id = ziti_admin.create(
        "external-jwt-signers", signer_body(name, issuer, jwks=jwks_server.publish(path, ec_key))
    )
    return signer_id, issuer, path


@pytest.fixture
def person(make_identity, ziti_unique):
    return make_identity(ziti_unique("jwt-person"), externalId=ziti_unique("ext"))


def challenge(response) -> str:
    return response.headers.get("www-authenticate", "")


# -- management CRUD ---------------------------------------------------------------------


def test_jwks_signer_detail_has_defaults(ziti_admin, signer):
    signer_id, issuer, _ = signer
    data = ziti_admin.mgmt_ok("GET", f"/external-jwt-signers/{signer_id}")
    assert data["issuer"] == issuer and data["enabled"] is True and data["audience"] == "ziti"
    assert data["claimsProperty"] == "sub" and data["useExternalId"] is False and data["targetToken"] == "ACCESS"
    assert data["certPem"] is None and data["fingerprint"] is None and data["kid"] is None
    assert data["jwksEndpoint"].endswith("/jwks.json") and data["scopes"] == ["openid"]
    assert data["_links"]["self"]["href"] == f"./external-jwt-signers/{signer_id}"


def test_cert_signer_takes_fingerprint_dates_and_kid_from_the_certificate(ziti_admin, ec_key, ziti_clock, ziti_unique):
    name = ziti_unique("cert-signer")
    pem = ec_key.cert_pem(ziti_clock.now(), cn="my-idp")
    signer_id = ziti_admin.create("external-jwt-signers", signer_body(name, f"https://{name}", cert_pem=pem))
    data = ziti_admin.mgmt_ok("GET", f"/external-jwt-signers/{signer_id}")
    assert data["commonName"] == "my-idp" and len(data["fingerprint"]) == 40
    assert data["kid"] == data["fingerprint"] and data["notBefore"] < data["notAfter"]


@pytest.mark.parametrize(
    "change, field",
    [
        ({"jwksEndpoint": None}, "certPem"),
        ({"certPem": "CERT"}, "certPem"),
        ({"jwksEndpoint": "ftp://keys.example/jwks"}, "jwksEndpoint"),
        ({"audience": None, "name": None}, "name"),
    ],
)
def test_invalid_signers_are_400(ziti_admin, ziti_unique, change, field):
    body = signer_body(ziti_unique("bad"), f"https://{ziti_unique('iss')}", jwks="https://keys.example/jwks.json")
    body.update(change)
    body = {key: value for key, value in body.items() if value is not None or key in ("jwksEndpoint",)}
    assert_error(ziti_admin.mgmt("POST", "/external-jwt-signers", json=body), 400, "COULD_NOT_VALIDATE", field)


def test_issuer_is_unique(ziti_admin, signer, ziti_unique):
    body = signer_body(ziti_unique("dup"), signer[1], jwks="https://keys.example/jwks.json")
    assert_error(ziti_admin.mgmt("POST", "/external-jwt-signers", json=body), 400, "COULD_NOT_VALIDATE", "issuer")


def test_patch_put_and_delete(ziti_admin, signer, ziti_unique):
    signer_id = signer[0]
    ziti_admin.mgmt_ok(
        "PATCH", f"/external-jwt-signers/{signer_id}", json={"enabled": False, "claimsProperty": "email"}
    )
    data = ziti_admin.mgmt_ok("GET", f"/external-jwt-signers/{signer_id}")
    assert data["enabled"] is False and data["claimsProperty"] == "email" and data["issuer"] == signer[1]
    body = signer_body(
        ziti_unique("renamed"), "https://other.example", jwks="https://keys.example/jwks.json", enabled=True
    )
    ziti_admin.mgmt_ok("PUT", f"/external-jwt-signers/{signer_id}", json=body)
    data = ziti_admin.mgmt_ok("GET", f"/external-jwt-signers/{signer_id}")
    assert data["issuer"] == "https://other.example" and data["claimsProperty"] == "sub"
    ziti_admin.mgmt_ok("DELETE", f"/external-jwt-signers/{signer_id}")
    assert_error(ziti_admin.mgmt("GET", f"/external-jwt-signers/{signer_id}"), 404, "NOT_FOUND")


def test_client_listing_needs_no_session_and_shows_the_client_view(ziti, signer):
    listed = ziti.edge_ok("GET", "/external-jwt-signers", params={"limit": 500})
    mine = next(item for item in listed if item["id"] == signer[0])
    assert mine["externalAuthUrl"] == "https://idp.example/auth" and mine["clientId"] == "ziti-client"
    assert mine["targetToken"] == "ACCESS" and mine["scopes"] == ["openid"] and mine["audience"] == "ziti"
    assert "openIdConfigurationUrl" in mine and "issuer" not in mine and "jwksEndpoint" not in mine


# -- primary login ---------------------------------------------------------------------------


def test_login_by_identity_id_opens_a_session(ziti, signer, person, ec_key, ziti_clock):
    token = ec_key.token(claims(signer[1], person, ziti_clock))
    response = ext_jwt_login(ziti, token)
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert data["identityId"] == person and data["authenticatorId"] == f"extJwtId:{signer[0]}"
    assert response.headers["zt-session"] == data["token"] and data["authQueries"] == []
    session = ziti.with_token(data["token"])
    assert session.edge_ok("GET", "/current-identity")["id"] == person


def test_the_harness_flow_logs_in_by_external_jwt(ziti, signer, person, ec_key, ziti_clock):
    data = flows.login_ext_jwt(ziti, ec_key.token(claims(signer[1], person, ziti_clock)))
    assert data["identityId"] == person and ziti.token == data["token"]
    assert ziti.edge_ok("GET", "/current-identity")["id"] == person


def test_management_api_accepts_ext_jwt_too(ziti, signer, person, ec_key, ziti_clock):
    response = ext_jwt_login(ziti, ec_key.token(claims(signer[1], person, ziti_clock)), api_name="management")
    assert response.status_code == 200


def test_login_by_external_id_through_a_claims_pointer(ziti, ziti_admin, signer, person, ec_key, ziti_clock):
    ziti_admin.mgmt_ok(
        "PATCH", f"/external-jwt-signers/{signer[0]}", json={"useExternalId": True, "claimsProperty": "/user/ids/0"}
    )
    external_id = ziti_admin.mgmt_ok("GET", f"/identities/{person}")["externalId"]
    token = ec_key.token(claims(signer[1], "nobody", ziti_clock, user={"ids": [external_id]}))
    assert ext_jwt_login(ziti, token).json()["data"]["identityId"] == person
    assert ext_jwt_login(ziti, ec_key.token(claims(signer[1], person, ziti_clock))).status_code == 401


def test_jwks_is_fetched_once_and_cached(ziti, signer, person, ec_key, ziti_clock, jwks_server):
    for _ in range(3):
        assert ext_jwt_login(ziti, ec_key.token(claims(signer[1], person, ziti_clock))).status_code == 200
    assert jwks_server.hits[signer[2]] == 1


def test_unknown_kid_refetches_at_most_once_a_second(ziti, signer, person, ec_key, ziti_clock, jwks_server):
    assert ext_jwt_login(ziti, ec_key.token(claims(signer[1], person, ziti_clock))).status_code == 200
    rotated = SigningKey("kid-ec-2")
    jwks_server.publish(signer[2], rotated)
    token = rotated.token(claims(signer[1], person, ziti_clock, lifetime=3600))
    assert_error(ext_jwt_login(ziti, token), 401, "UNAUTHORIZED")  # same instant: no refetch yet
    ziti_clock.advance(seconds=1)
    assert ext_jwt_login(ziti, token).status_code == 200
    assert jwks_server.hits[signer[2]] == 2


def test_rsa_keys_and_cert_signers_work(ziti, ziti_admin, person, ziti_clock, ziti_unique):
    key = SigningKey("rsa-1", kind="rsa")
    name = ziti_unique("rsa-signer")
    pem = key.cert_pem(ziti_clock.now())
    signer_id = ziti_admin.create(
        "external-jwt-signers", signer_body(name, f"https://{name}", cert_pem=pem, kid="rsa-1")
    )
    assert ext_jwt_login(ziti, key.token(claims(f"https://{name}", person, ziti_clock))).status_code == 200
    wrong_kid = key.token(claims(f"https://{name}", person, ziti_clock), kid="other")
    assert 'error="invalid"' in challenge(ext_jwt_login(ziti, wrong_kid))
    assert signer_id


# -- failures ------------------------------------------------------------------------------


def test_failures_are_401_with_a_primary_challenge(ziti, signer, person, ec_key, ziti_clock):
    signer_id, issuer, _ = signer
    forged = SigningKey("kid-ec-1")  # same kid, other key
    cases = {
        "invalid": [
            forged.token(claims(issuer, person, ziti_clock)),
            ec_key.token(claims(issuer, person, ziti_clock), kid=None),
            ec_key.token(claims(issuer, person, ziti_clock, audience="someone-else")),
            ec_key.token(claims(issuer, person, ziti_clock, nbf=int(ziti_clock.now().timestamp()) + 60)),
        ],
        "expired": [ec_key.token(claims(issuer, person, ziti_clock, lifetime=-1))],
        "missing": [
            ec_key.token(claims(issuer + "/", person, ziti_clock)),
            ec_key.token(claims(issuer, "no-such-id", ziti_clock)),
            "not-a-jwt",
            None,
        ],
    }
    for reason, tokens in cases.items():
        for token in tokens:
            response = ext_jwt_login(ziti, token)
            assert_error(response, 401, "UNAUTHORIZED")
            header = challenge(response)
            assert header.startswith('Bearer realm="openziti-primary-ext-jwt"') and f'error="{reason}"' in header, (
                header
            )
            assert 'id="' in header and signer_id in header and issuer in header


def test_hmac_tokens_are_refused(ziti, signer, person, ziti_clock):
    import jwt

    token = jwt.encode(
        claims(signer[1], person, ziti_clock),
        "shared-secret-of-at-least-32-bytes!!",
        algorithm="HS256",
        headers={"kid": "kid-ec-1"},
    )
    assert 'error="invalid"' in challenge(ext_jwt_login(ziti, token))


def test_token_expires_and_becomes_valid_by_the_clock(ziti, signer, person, ec_key, ziti_clock):
    now = int(ziti_clock.now().timestamp())
    token = ec_key.token({"iss": signer[1], "sub": person, "aud": ["a", "ziti"], "nbf": now + 60, "exp": now + 120})
    assert 'error="invalid"' in challenge(ext_jwt_login(ziti, token))
    ziti_clock.advance(seconds=60)
    assert ext_jwt_login(ziti, token).status_code == 200
    ziti_clock.advance(seconds=60)
    assert 'error="expired"' in challenge(ext_jwt_login(ziti, token))


def test_disabled_signer_or_none_at_all_is_a_plain_401(ziti, ziti_admin, signer, person, ec_key, ziti_clock):
    for other in ziti_admin.mgmt_ok("GET", "/external-jwt-signers", params={"limit": 500}):
        ziti_admin.mgmt_ok("PATCH", f"/external-jwt-signers/{other['id']}", json={"enabled": False})
    response = ext_jwt_login(ziti, ec_key.token(claims(signer[1], person, ziti_clock)))
    assert_error(response, 401, "UNAUTHORIZED")
    assert "www-authenticate" not in response.headers


def test_disabled_identity_cannot_log_in_until_the_lock_ends(ziti, ziti_admin, signer, person, ec_key, ziti_clock):
    ziti_admin.mgmt_ok("POST", f"/identities/{person}/disable", json={"durationMinutes": 5})
    assert ext_jwt_login(ziti, ec_key.token(claims(signer[1], person, ziti_clock))).status_code == 401
    ziti_clock.advance(minutes=5, seconds=1)
    assert ext_jwt_login(ziti, ec_key.token(claims(signer[1], person, ziti_clock))).status_code == 200


def test_a_valid_token_among_three_bearers_is_found(ziti, signer, person, ec_key, ziti_clock):
    good = ec_key.token(claims(signer[1], person, ziti_clock))
    header = f"Bearer junk, Bearer {SigningKey('x').token(claims('https://nobody', person, ziti_clock))}, Bearer {good}"
    assert ext_jwt_login(ziti, None, Authorization=header).status_code == 200
    fourth = f"Bearer a, Bearer b, Bearer c, Bearer {good}"
    assert ext_jwt_login(ziti, None, Authorization=fourth).status_code == 401


def test_events_never_carry_the_token(ziti, ziti_app, signer, person, ec_key, ziti_clock):
    token = ec_key.token(claims(signer[1], person, ziti_clock))
    session_token = ext_jwt_login(ziti, token).json()["data"]["token"]
    logged = str(ziti_app.controller.events.query())
    assert token not in logged and session_token not in logged
    success = ziti_app.controller.events.query("authentication", event_type="success", identity_id=person)
    assert success and success[-1]["auth_method"] == "ext-jwt"


@pytest.mark.parametrize("style", ["c", "go"])
def test_oidc_login_by_external_jwt(ziti, signer, person, ec_key, ziti_clock, style):
    from harness.client.oidc import OidcLogin

    flow = OidcLogin(ziti.raw, "ext-jwt", style, bearer=ec_key.token(claims(signer[1], person, ziti_clock)))
    tokens = flow.run()
    assert tokens.claims["sub"] == person and tokens.claims["amr"] == ["ext-jwt"]
    assert tokens.claims["z_authid"] == f"extJwtId:{signer[0]}"
    me = ziti.raw.get("/edge/client/v1/current-identity", headers={"Authorization": f"Bearer {tokens.access_token}"})
    assert me.status_code == 200 and me.json()["data"]["id"] == person


def test_oidc_login_with_a_bad_external_jwt_is_401_with_the_primary_challenge(ziti, signer, person, ec_key, ziti_clock):
    from harness.client.oidc import OidcError, OidcLogin

    expired = claims(signer[1], person, ziti_clock)
    expired["exp"] = int(ziti_clock.now().timestamp()) - 10
    with pytest.raises(OidcError) as caught:
        OidcLogin(ziti.raw, "ext-jwt", "c", bearer=ec_key.token(expired)).run()
    assert caught.value.response.status_code == 401 and caught.value.body["code"] == "UNAUTHORIZED"
    assert 'realm="openziti-primary-ext-jwt" error="expired"' in caught.value.response.headers["www-authenticate"]
