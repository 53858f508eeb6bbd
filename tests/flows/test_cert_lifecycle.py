"""Certificate lifecycle: extend / extend-verify, request-extend, re-enroll, API-session certificates."""

from __future__ import annotations

from cryptography import x509
from cryptography.x509.oid import NameOID

from harness.client import pki as hp
from tests.support import (
    CLIENT,
    assert_error,
    cert_login,
    enroll_ott,
    enrolled,
    new_identity,
    ok,
    session_of,
    third_party,
    verified_ca,
)


def cert_auth_id(cert_admin, identity_id: str) -> str:
    return cert_admin.mgmt_ok("GET", f"/identities/{identity_id}")["authenticators"]["cert"]["id"]


def extend(session, auth_id: str, key=None):
    csr, key = hp.make_csr("extended", key=key)
    response = session.request(
        "POST", f"{CLIENT}/current-identity/authenticators/{auth_id}/extend", json={"clientCertCsr": hp.csr_pem(csr)}
    )
    return response, key


def test_extension_keeps_the_old_certificate_until_verified(cert_admin, cert_api, make_cert_api, ziti_unique):
    identity_id, old = enrolled(cert_admin, cert_api, ziti_unique("extend"))
    auth_id = cert_auth_id(cert_admin, identity_id)
    session = session_of(make_cert_api(old), cert_login(make_cert_api(old)))

    response, key = extend(session, auth_id)
    data = ok(response)
    chain = x509.load_pem_x509_certificates(data["clientCert"].encode())
    new = hp.CertKey(chain[0], key, chain[1:])
    assert "BEGIN CERTIFICATE" in data["ca"] and new.fingerprint != old.fingerprint
    assert (
        new.cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        == old.cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    )
    assert ok(cert_login(make_cert_api(old)))["identityId"] == identity_id  # still the old one
    assert_error(cert_login(make_cert_api(new)), 401, "INVALID_AUTH")

    verify = session.request(
        "POST", f"{CLIENT}/current-identity/authenticators/{auth_id}/extend-verify", json={"clientCert": new.cert_pem}
    )
    assert verify.status_code == 200 and verify.json() == {"data": {}, "meta": {}}
    assert_error(cert_login(make_cert_api(old)), 401, "INVALID_AUTH")
    assert ok(cert_login(make_cert_api(new)))["identityId"] == identity_id
    assert cert_admin.mgmt_ok("GET", f"/authenticators/{auth_id}")["fingerprint"] == new.fingerprint


def test_extension_needs_the_certificate_on_the_connection(cert_admin, cert_api, make_cert_api, ziti_unique):
    identity_id, client = enrolled(cert_admin, cert_api, ziti_unique("noconn"))
    auth_id = cert_auth_id(cert_admin, identity_id)
    token = ok(cert_login(make_cert_api(client)))["token"]
    without_cert = make_cert_api().with_token(token)
    assert_error(extend(without_cert, auth_id)[0], 401, "UNAUTHORIZED")
    _, other = enrolled(cert_admin, cert_api, ziti_unique("other"))
    assert_error(extend(make_cert_api(other).with_token(token), auth_id)[0], 401, "UNAUTHORIZED")
    assert_error(extend(make_cert_api(client).with_token(token), "no-such-id")[0], 404, "NOT_FOUND")


def test_extend_verify_rules(cert_admin, cert_api, make_cert_api, ziti_unique):
    identity_id, client = enrolled(cert_admin, cert_api, ziti_unique("verify"))
    auth_id = cert_auth_id(cert_admin, identity_id)
    session = session_of(make_cert_api(client), cert_login(make_cert_api(client)))
    path = f"{CLIENT}/current-identity/authenticators/{auth_id}/extend-verify"
    assert_error(
        session.request("POST", path, json={"clientCert": client.cert_pem}), 409, "CAN_NOT_UPDATE_AUTHENTICATOR"
    )
    ok(extend(session, auth_id)[0])
    assert_error(session.request("POST", path, json={"clientCert": client.cert_pem}), 400, "INVALID_CLIENT_CERT")
    assert_error(session.request("POST", path, json={"clientCert": "junk"}), 400, "INVALID_CLIENT_CERT")
    assert_error(session.request("POST", path, json={}), 400, "COULD_NOT_VALIDATE", "clientCert")


def test_third_party_certificates_do_not_extend(cert_admin, make_cert_api, ziti_clock, ziti_unique):
    root, inter = third_party(ziti_clock.now(), "No Extend")
    verified_ca(cert_admin, ziti_unique("noext-ca"), root, ziti_clock.now(), isAuthEnabled=True)
    identity_id = new_identity(cert_admin, ziti_unique("noext"))
    client = hp.make_leaf(inter, "noext", now=ziti_clock.now())
    auth_id = cert_admin.create(
        "authenticators", {"identityId": identity_id, "method": "cert", "certPem": client.cert_pem}
    )
    session = session_of(make_cert_api(client), cert_login(make_cert_api(client)))
    assert_error(extend(session, auth_id)[0], 409, "CAN_NOT_UPDATE_AUTHENTICATOR")


def test_request_extend_flags_and_their_clearing(cert_admin, cert_api, make_cert_api, ziti_unique):
    identity_id, client = enrolled(cert_admin, cert_api, ziti_unique("reqext"))
    auth_id = cert_auth_id(cert_admin, identity_id)
    assert cert_admin.mgmt("POST", f"/authenticators/{auth_id}/request-extend", json={"rollKeys": False}).json() == {
        "data": {},
        "meta": {},
    }
    detail = cert_admin.mgmt_ok("GET", f"/authenticators/{auth_id}")
    assert detail["isExtendRequested"] is True and detail["isKeyRollRequested"] is False and detail["extendRequestedAt"]
    response = cert_login(make_cert_api(client))
    assert response.headers["ziti-authenticator-extend-requested"] == "true"
    session = session_of(make_cert_api(client), response)
    new_response, key = extend(session, auth_id)
    new_pem = ok(new_response)["clientCert"]
    ok(
        session.request(
            "POST", f"{CLIENT}/current-identity/authenticators/{auth_id}/extend-verify", json={"clientCert": new_pem}
        )
    )
    detail = cert_admin.mgmt_ok("GET", f"/authenticators/{auth_id}")
    assert detail["isExtendRequested"] is False and detail["extendRequestedAt"] is None
    assert "isCertExtendRequested" not in session.edge_ok("GET", "/current-api-session")


def test_request_extend_is_for_certificate_authenticators_only(cert_admin, make_identity):
    identity_id = make_identity(password="pass-word", username="updb-only")
    auth_id = cert_admin.mgmt_ok("GET", f"/identities/{identity_id}")["authenticators"]["updb"]["id"]
    assert_error(
        cert_admin.mgmt("POST", f"/authenticators/{auth_id}/request-extend", json={"rollKeys": True}), 403, "FORBIDDEN"
    )
    assert_error(cert_admin.mgmt("POST", "/authenticators/nope/request-extend", json={}), 404, "NOT_FOUND")


def test_re_enroll_updb_keeps_the_username(cert_admin, cert_api, make_identity):
    identity_id = make_identity(password="old-pass", username="reenroll-user")
    auth_id = cert_admin.mgmt_ok("GET", f"/identities/{identity_id}")["authenticators"]["updb"]["id"]
    response = cert_admin.mgmt(
        "POST", f"/authenticators/{auth_id}/re-enroll", json={"expiresAt": "2099-01-01T00:00:00Z"}
    )
    assert response.status_code == 201
    enrollment_id = response.json()["data"]["id"]
    assert response.json()["data"]["_links"]["self"]["href"] == f"./enrollments/{enrollment_id}"
    enrollment = cert_admin.mgmt_ok("GET", f"/enrollments/{enrollment_id}")
    assert enrollment["method"] == "updb" and enrollment["username"] == "reenroll-user"
    assert_error(
        cert_api.mgmt(
            "POST",
            "/authenticate",
            params={"method": "password"},
            json={"username": "reenroll-user", "password": "old-pass"},
        ),
        401,
        "INVALID_AUTH",
    )
    ok(
        cert_api.request(
            "POST",
            CLIENT + "/enroll",
            params={"method": "updb", "token": enrollment["token"]},
            json={"password": "new-pass"},
        )
    )
    assert cert_api.signed_in("reenroll-user", "new-pass").token


def test_re_enroll_network_cert_gives_ott_and_ca_cert_gives_ottca(
    cert_admin, cert_api, make_cert_api, ziti_clock, ziti_unique
):
    identity_id, client = enrolled(cert_admin, cert_api, ziti_unique("re-ott"))
    response = cert_admin.mgmt(
        "POST",
        f"/authenticators/{cert_auth_id(cert_admin, identity_id)}/re-enroll",
        json={"expiresAt": "2099-01-01T00:00:00.000Z"},
    )
    enrollment = cert_admin.mgmt_ok("GET", f"/enrollments/{response.json()['data']['id']}")
    assert response.status_code == 201 and enrollment["method"] == "ott"
    assert_error(cert_login(make_cert_api(client)), 401, "INVALID_AUTH")
    assert ok(cert_login(make_cert_api(enroll_ott(cert_api, enrollment["token"]))))["identityId"] == identity_id

    root, inter = third_party(ziti_clock.now(), "Re-enroll")
    ca_id = verified_ca(cert_admin, ziti_unique("re-ca"), root, ziti_clock.now())
    other = new_identity(cert_admin, ziti_unique("re-ottca"))
    leaf = hp.make_leaf(inter, "re", now=ziti_clock.now())
    auth_id = cert_admin.create("authenticators", {"identityId": other, "method": "cert", "certPem": leaf.chain_pem})
    response = cert_admin.mgmt(
        "POST", f"/authenticators/{auth_id}/re-enroll", json={"expiresAt": "2099-01-01T00:00:00Z"}
    )
    enrollment = cert_admin.mgmt_ok("GET", f"/enrollments/{response.json()['data']['id']}")
    assert enrollment["method"] == "ottca" and enrollment["caId"] == ca_id


def test_api_session_certificates_belong_to_their_session(cert_admin, cert_api, make_cert_api, ziti_unique):
    identity_id, client = enrolled(cert_admin, cert_api, ziti_unique("ephemeral"))
    session = session_of(make_cert_api(client), cert_login(make_cert_api(client)))
    csr, _ = hp.make_csr("ignored-subject")
    response = session.request("POST", CLIENT + "/current-api-session/certificates", json={"csr": hp.csr_pem(csr)})
    assert response.status_code == 201
    created = response.json()["data"]
    assert set(created) == {"_links", "id", "certificate", "cas"}
    cert = x509.load_pem_x509_certificates(created["certificate"].encode())[0]
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == identity_id
    assert (cert.not_valid_after_utc - cert.not_valid_before_utc).total_seconds() == 12 * 3600
    uri = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.UniformResourceIdentifier
    )[0]
    assert uri.endswith(
        f"/identity/{identity_id}/apiSession/{ok(session.edge('GET', '/current-api-session'))['id']}"
        f"/apiSessionCertificate/{created['id']}"
    )

    listed = session.edge_ok("GET", "/current-api-session/certificates")
    assert [c["id"] for c in listed] == [created["id"]]
    detail = session.edge_ok("GET", f"/current-api-session/certificates/{created['id']}")
    assert detail["fingerprint"] == hp.sha1_fingerprint(cert) and detail["validTo"] and detail["subject"]

    other = session_of(make_cert_api(client), cert_login(make_cert_api(client)))
    assert other.edge_ok("GET", "/current-api-session/certificates") == []
    assert_error(other.edge("GET", f"/current-api-session/certificates/{created['id']}"), 404, "NOT_FOUND")
    assert_error(other.edge("DELETE", f"/current-api-session/certificates/{created['id']}"), 404, "NOT_FOUND")
    assert_error(
        session.edge("POST", "/current-api-session/certificates", json={"csr": "junk"}), 400, "COULD_NOT_PROCESS_CSR"
    )
    ok(session.edge("DELETE", f"/current-api-session/certificates/{created['id']}"))
    assert session.edge_ok("GET", "/current-api-session/certificates") == []


def test_api_session_certificates_go_with_their_session(cert_admin, cert_api, make_cert_api, ziti_unique):
    _, client = enrolled(cert_admin, cert_api, ziti_unique("cascade"))
    session = session_of(make_cert_api(client), cert_login(make_cert_api(client)))
    before = cert_admin.mgmt_ok("GET", "/summary")["apiSessionCertificates"]
    csr, _ = hp.make_csr("x")
    ok(session.edge("POST", "/current-api-session/certificates", json={"csr": hp.csr_pem(csr)}))
    assert cert_admin.mgmt_ok("GET", "/summary")["apiSessionCertificates"] == before + 1
    ok(session.edge("DELETE", "/current-api-session"))
    assert cert_admin.mgmt_ok("GET", "/summary")["apiSessionCertificates"] == before
