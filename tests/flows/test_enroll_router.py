"""Router enrollment (erott / trott) and router certificate extension, through the API."""

from __future__ import annotations

import jwt
import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from harness.client import pki as hp
from tests.support import CLIENT, assert_error, ok


@pytest.fixture
def router_token(cert_admin, ziti_unique):
    """A new edge router: ``(router id, {token, jwt})`` from its management view."""
    router_id = cert_admin.create("edge-routers", {"name": ziti_unique("er")})
    view = cert_admin.mgmt_ok("GET", f"/edge-routers/{router_id}")
    return router_id, {"token": view["enrollmentToken"], "jwt": view["enrollmentJwt"]}


def router_view(cert_admin, router_id: str) -> dict:
    return cert_admin.mgmt_ok("GET", f"/routers/{router_id}")


def csrs(router_id: str, cn: str | None = None):
    client, client_key = hp.make_csr(cn or router_id)
    server, server_key = hp.make_csr(router_id, dns=["router.example.test"], ips=["10.0.0.7"])
    return hp.csr_pem(client), client_key, hp.csr_pem(server)


def enroll_router(ziti, token, body):
    return ziti.request("POST", CLIENT + "/enroll", params={"method": "erott", "token": token}, json=body)


def enrolled_router(make_cert_api, router_id: str, token: str) -> hp.CertKey:
    """Enroll the router with fresh CSRs; return its client certificate chain and key."""
    client_csr, client_key, server_csr = csrs(router_id)
    data = ok(enroll_router(make_cert_api(), token, {"certCsr": client_csr, "serverCertCsr": server_csr}))
    chain = x509.load_pem_x509_certificates(data["cert"].encode())
    return hp.CertKey(chain[0], client_key, chain[1:])


def test_edge_router_enrolls_with_client_and_server_csrs(cert_admin, make_cert_api, router_token):
    router_id, record = router_token
    claims = jwt.decode(record["jwt"], options={"verify_signature": False})
    assert claims["sub"] == router_id and claims["em"] == "erott"
    client_csr, client_key, server_csr = csrs(router_id)
    data = ok(enroll_router(make_cert_api(), record["token"], {"certCsr": client_csr, "serverCertCsr": server_csr}))

    client = x509.load_pem_x509_certificates(data["cert"].encode())
    server = x509.load_pem_x509_certificates(data["serverCert"].encode())
    assert len(client) == 2 and len(server) == 2 and "BEGIN CERTIFICATE" in data["ca"]
    assert ExtendedKeyUsageOID.SERVER_AUTH in server[0].extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    sans = server[0].extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["router.example.test"]
    stored = router_view(cert_admin, router_id)
    assert stored["isVerified"] is True and stored["fingerprint"] == hp.sha1_fingerprint(client[0])
    assert stored["enrollmentToken"] is None
    assert_error(
        enroll_router(make_cert_api(), record["token"], {"certCsr": client_csr, "serverCertCsr": server_csr}),
        400,
        "INVALID_ENROLLMENT_TOKEN",
    )


def test_router_enrollment_checks_csrs(make_cert_api, router_token):
    router_id, record = router_token
    client_csr, _, server_csr = csrs(router_id)
    ziti = make_cert_api()
    assert_error(enroll_router(ziti, record["token"], {"certCsr": client_csr}), 400, "MISSING_OR_INVALID_CSR")
    wrong_cn, _, _ = csrs(router_id, cn="someone-else")
    assert_error(
        enroll_router(ziti, record["token"], {"certCsr": wrong_cn, "serverCertCsr": server_csr}),
        400,
        "COULD_NOT_PROCESS_CSR",
    )
    assert_error(
        enroll_router(ziti, record["token"], {"certCsr": client_csr, "serverCertCsr": "junk"}),
        400,
        "COULD_NOT_PROCESS_CSR",
    )
    explicit = ziti.request(
        "POST",
        CLIENT + "/enroll/erott",
        json={"token": record["token"], "clientCsr": client_csr, "serverCsr": server_csr},
    )
    assert ok(explicit)["serverCert"]


def test_router_token_expires_and_is_not_an_identity_token(make_cert_api, router_token, ziti_clock):
    router_id, record = router_token
    client_csr, _, server_csr = csrs(router_id)
    response = make_cert_api().request(
        "POST",
        CLIENT + "/enroll",
        params={"method": "ott", "token": record["token"]},
        content=client_csr,
        headers={"content-type": "text/plain"},
    )
    assert_error(response, 400, "INVALID_ENROLL_METHOD")
    ziti_clock.advance(minutes=181)
    assert_error(
        enroll_router(make_cert_api(), record["token"], {"certCsr": client_csr, "serverCertCsr": server_csr}),
        400,
        "ENROLLMENT_EXPIRED",
    )


def test_router_extends_with_its_current_certificate(cert_admin, make_cert_api, router_token):
    router_id, record = router_token
    current = enrolled_router(make_cert_api, router_id, record["token"])
    new_client, _, new_server = csrs(router_id)
    body = {"certCsr": new_client, "serverCertCsr": new_server}

    assert_error(make_cert_api().request("POST", CLIENT + "/enroll/extend/router", json=body), 401, "UNAUTHORIZED")
    stranger = hp.make_leaf(None, router_id)
    assert_error(
        make_cert_api(stranger).request("POST", CLIENT + "/enroll/extend/router", json=body), 401, "UNAUTHORIZED"
    )
    assert_error(
        make_cert_api(current).request("POST", CLIENT + "/enroll/extend/router", json={"certCsr": new_client}),
        400,
        "COULD_NOT_VALIDATE",
        "serverCertCsr",
    )
    extended = ok(make_cert_api(current).request("POST", CLIENT + "/enroll/extend/router", json=body))
    new_leaf = x509.load_pem_x509_certificates(extended["cert"].encode())[0]
    assert router_view(cert_admin, router_id)["fingerprint"] == hp.sha1_fingerprint(new_leaf) != current.fingerprint
    assert_error(
        make_cert_api(current).request("POST", CLIENT + "/enroll/extend/router", json=body), 401, "UNAUTHORIZED"
    )


def test_transit_router_enrolls_with_trott(cert_admin, make_cert_api, ziti_unique):
    router_id = cert_admin.create("transit-routers", {"name": ziti_unique("tr")})
    view = cert_admin.mgmt_ok("GET", f"/transit-routers/{router_id}")
    assert jwt.decode(view["enrollmentJwt"], options={"verify_signature": False})["em"] == "trott"
    client_csr, _, server_csr = csrs(router_id)
    response = make_cert_api().request(
        "POST",
        CLIENT + "/enroll",
        params={"method": "trott", "token": view["enrollmentToken"]},
        json={"certCsr": client_csr, "serverCertCsr": server_csr},
    )
    assert ok(response)["cert"] and router_view(cert_admin, router_id)["isVerified"] is True


def test_re_enrolled_router_forgets_its_certificate_and_enrolls_again(cert_admin, make_cert_api, router_token):
    router_id, record = router_token
    old = enrolled_router(make_cert_api, router_id, record["token"])
    ok(cert_admin.mgmt("POST", f"/edge-routers/{router_id}/re-enroll"))
    view = router_view(cert_admin, router_id)
    assert view["isVerified"] is False and view["fingerprint"] is None and view["enrollmentToken"] != record["token"]
    new_client, _, new_server = csrs(router_id)
    body = {"certCsr": new_client, "serverCertCsr": new_server}
    assert_error(make_cert_api(old).request("POST", CLIENT + "/enroll/extend/router", json=body), 401, "UNAUTHORIZED")
    assert ok(enroll_router(make_cert_api(), view["enrollmentToken"], body))["serverCert"]
