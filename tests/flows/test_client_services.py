"""An enrolled SDK client after login: the request sequence of sdk-request-sequence.md, then dialing.

The client enrolls by ott, logs in with its certificate at the legacy root path,
walks the after-login sequence, pages ``/services?configTypes=all``, refreshes on
``lastChangeAt`` and creates a Dial session whose edge routers carry ``urls``.
"""

from __future__ import annotations

import pytest

from tests.support import CLIENT, cert_login, enrolled, ok, session_of

INTERCEPT = {"protocols": ["tcp"], "addresses": ["web.ziti"], "portRanges": [{"low": 443, "high": 443}]}


@pytest.fixture
def sdk(cert_admin, cert_api, make_cert_api, ziti_unique):
    """A logged-in certificate client with role attribute ``sdk-users``: ``(identity_id, ZitiClient)``."""
    identity_id, client_cert = enrolled(cert_admin, cert_api, ziti_unique("sdk"), roleAttributes=["sdk-users"])
    conn = make_cert_api(client_cert)
    return identity_id, session_of(conn, cert_login(conn))


def network(cert_admin, unique, services: int = 30) -> list[str]:
    """``services`` dialable services with intercept configs, one shared edge router; returns the service ids."""
    ids = []
    for index in range(services):
        config_id = cert_admin.create(
            "configs", {"name": unique("icpt"), "configTypeId": "g7cIWbcGg", "data": INTERCEPT}
        )
        ids.append(
            cert_admin.create(
                "services",
                {
                    "name": unique(f"web{index}"),
                    "encryptionRequired": True,
                    "roleAttributes": ["sdk-services"],
                    "configs": [config_id],
                },
            )
        )
    cert_admin.create("edge-routers", {"name": unique("er"), "roleAttributes": ["sdk-routers"]})
    for collection, body in (
        ("service-policies", {"type": "Dial", "identityRoles": ["#sdk-users"], "serviceRoles": ["#sdk-services"]}),
        ("edge-router-policies", {"identityRoles": ["#sdk-users"], "edgeRouterRoles": ["#sdk-routers"]}),
        ("service-edge-router-policies", {"serviceRoles": ["#sdk-services"], "edgeRouterRoles": ["#sdk-routers"]}),
    ):
        cert_admin.create(collection, {"name": unique("p"), "semantic": "AnyOf", **body})
    return ids


def services_pages(session) -> list[dict]:
    """``GET /services?configTypes=all&limit=25&offset=N`` until ``totalCount`` is reached, as the SDK pages."""
    out, offset = [], 0
    while True:
        body = session.request(
            "GET", CLIENT + "/services", params={"configTypes": "all", "limit": 25, "offset": offset}
        ).json()
        out += body["data"]
        offset += 25
        if offset >= body["meta"]["pagination"]["totalCount"]:
            return out


def test_after_login_sequence_lists_services_and_dials(cert_admin, sdk, ziti_unique):
    identity_id, session = sdk
    service_ids = network(cert_admin, ziti_unique)
    assert session.request("GET", CLIENT + "/.well-known/est/cacerts").status_code == 200
    assert ok(session.request("GET", CLIENT + "/current-identity"))["id"] == identity_id
    assert ok(session.request("GET", CLIENT + "/current-api-session"))["identityId"] == identity_id
    assert ok(session.request("GET", CLIENT + "/current-identity"))["id"] == identity_id
    routers = session.request("GET", CLIENT + "/current-identity/edge-routers", params={"limit": 25, "offset": 0})
    assert routers.status_code == 200 and routers.json()["meta"]["pagination"]["limit"] == 25
    assert ok(session.request("GET", CLIENT + "/current-api-session/service-updates"))["lastChangeAt"]

    services = services_pages(session)
    assert sorted(s["id"] for s in services) == sorted(service_ids)
    first = services[0]
    assert first["permissions"] == ["Dial"] and first["config"]["intercept.v1"] == INTERCEPT
    assert first["postureQueries"][0]["isPassing"] is True

    dial = session.request("POST", CLIENT + "/sessions", json={"serviceId": first["id"], "type": "Dial"})
    assert dial.status_code == 201
    routers = dial.json()["data"]["edgeRouters"]
    assert len(routers) == 1 and isinstance(routers[0]["urls"], dict)


def test_refresh_fetches_services_only_when_last_change_moves(cert_admin, sdk, ziti_unique, ziti_clock):
    _, session = sdk
    service_ids = network(cert_admin, ziti_unique, services=2)
    marker = lambda: ok(session.request("GET", CLIENT + "/current-api-session/service-updates"))["lastChangeAt"]  # noqa: E731
    before = marker()
    ziti_clock.advance(seconds=30)
    assert marker() == before
    cert_admin.mgmt_ok("PATCH", f"/services/{service_ids[0]}", json={"roleAttributes": []})
    after = marker()
    assert after > before
    assert [s["id"] for s in services_pages(session)] == [service_ids[1]]
