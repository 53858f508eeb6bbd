"""Posture checks of every type, posture responses and their effect on services and sessions."""

from __future__ import annotations

import pytest

from tests.support import assert_error

BODIES = {
    "OS": {"operatingSystems": [{"type": "Windows", "versions": [">=10.0.19041"]}, {"type": "Linux", "versions": []}]},
    "PROCESS": {"process": {"osType": "Windows", "path": "C:\\av.exe", "hashes": ["ABC"], "signerFingerprint": "ff"}},
    "PROCESS_MULTI": {
        "semantic": "AllOf",
        "processes": [{"osType": "Linux", "path": "/bin/av", "hashes": [], "signerFingerprints": ["aa"]}],
    },
    "DOMAIN": {"domains": ["corp.example"]},
    "MAC": {"macAddresses": ["AA:BB:CC:DD:EE:FF"]},
    "MFA": {"timeoutSeconds": 300, "promptOnWake": True, "promptOnUnlock": False, "ignoreLegacyEndpoints": True},
}


@pytest.mark.parametrize("type_id", sorted(BODIES))
def test_create_and_read_every_type(ziti_admin, ziti_unique, type_id):
    name = ziti_unique("pc")
    check_id = ziti_admin.create(
        "posture-checks", {"name": name, "typeId": type_id, "roleAttributes": ["r"], **BODIES[type_id]}
    )
    data = ziti_admin.mgmt_ok("GET", f"/posture-checks/{check_id}")
    assert (
        data["name"] == name and data["typeId"] == type_id and data["version"] == 1 and data["roleAttributes"] == ["r"]
    )
    for field, value in BODIES[type_id].items():
        assert data[field] == value, field
    other_fields = {f for t, body in BODIES.items() if t != type_id for f in body} - set(BODIES[type_id])
    assert not other_fields & set(data)


@pytest.mark.parametrize("type_id", ["OS", "PROCESS", "PROCESS_MULTI", "DOMAIN", "MAC"])
def test_type_specific_fields_are_required(ziti_admin, ziti_unique, type_id):
    response = ziti_admin.mgmt("POST", "/posture-checks", json={"name": ziti_unique(), "typeId": type_id})
    assert_error(
        response, 400, "COULD_NOT_VALIDATE", next(iter(BODIES[type_id])) if type_id != "PROCESS_MULTI" else "semantic"
    )


def test_mfa_timeout_zero_reads_back_minus_one_and_type_cannot_change(ziti_admin, ziti_unique):
    check_id = ziti_admin.create("posture-checks", {"name": ziti_unique(), "typeId": "MFA", "timeoutSeconds": 0})
    assert ziti_admin.mgmt_ok("GET", f"/posture-checks/{check_id}")["timeoutSeconds"] == -1
    assert_error(
        ziti_admin.mgmt("PATCH", f"/posture-checks/{check_id}", json={"typeId": "MAC", "macAddresses": ["a"]}),
        400,
        "COULD_NOT_VALIDATE",
        "typeId",
    )
    assert_error(
        ziti_admin.mgmt("PATCH", f"/posture-checks/{check_id}", json={"name": "x"}), 400, "COULD_NOT_VALIDATE", "typeId"
    )
    ziti_admin.mgmt_ok("PATCH", f"/posture-checks/{check_id}", json={"typeId": "MFA", "timeoutSeconds": 60})
    data = ziti_admin.mgmt_ok("GET", f"/posture-checks/{check_id}")
    assert data["timeoutSeconds"] == 60 and data["version"] == 1


def test_bad_os_version_range_is_rejected(ziti_admin, ziti_unique):
    body = {"name": ziti_unique(), "typeId": "OS", "operatingSystems": [{"type": "Linux", "versions": [">=banana"]}]}
    assert_error(ziti_admin.mgmt("POST", "/posture-checks", json=body), 400, "COULD_NOT_VALIDATE", "operatingSystems")


def test_posture_check_types_and_role_filter(ziti_admin, ziti_unique):
    types = {t["id"]: t for t in ziti_admin.mgmt_ok("GET", "/posture-check-types", params={"limit": -1})}
    assert set(types) == {"OS", "PROCESS", "DOMAIN", "MAC", "PROCESS_MULTI"}
    assert {"type": "Windows", "versions": ["Vista", "7", "8", "10", "2000"]} in types["OS"]["operatingSystems"]
    assert ziti_admin.mgmt_ok("GET", "/posture-check-types/DOMAIN")["name"] == "Windows Domain Check"
    attr = ziti_unique("pca")
    check_id = ziti_admin.create(
        "posture-checks", {"name": ziti_unique(), "typeId": "DOMAIN", "domains": ["d"], "roleAttributes": [attr]}
    )
    assert [c["id"] for c in ziti_admin.mgmt_ok("GET", "/posture-checks", params={"roleFilter": f"#{attr}"})] == [
        check_id
    ]
    assert attr in ziti_admin.mgmt_ok("GET", "/posture-check-role-attributes")


@pytest.fixture
def guarded(make_client, make_service, make_edge_router, make_policy, ziti_admin, ziti_unique):
    """A dialable service whose one policy requires a domain check: ``(identity_id, client, service_id, check_id)``."""
    identity_id, client = make_client()
    service_id, router_id = make_service(), make_edge_router()
    check_id = ziti_admin.create(
        "posture-checks", {"name": ziti_unique(), "typeId": "DOMAIN", "domains": ["Corp.Example"]}
    )
    make_policy(
        "service-policies",
        type="Dial",
        identityRoles=[f"@{identity_id}"],
        serviceRoles=[f"@{service_id}"],
        postureCheckRoles=[f"@{check_id}"],
    )
    make_policy("edge-router-policies", identityRoles=[f"@{identity_id}"], edgeRouterRoles=[f"@{router_id}"])
    make_policy("service-edge-router-policies", serviceRoles=[f"@{service_id}"], edgeRouterRoles=["#all"])
    return identity_id, client, service_id, check_id


def test_failing_posture_refuses_sessions_and_records_the_failure(ziti_admin, guarded):
    identity_id, client, service_id, check_id = guarded
    query = client.edge_ok("GET", f"/services/{service_id}")["postureQueries"][0]
    assert query["isPassing"] is False and query["postureQueries"][0]["queryType"] == "DOMAIN"
    assert query["postureQueries"][0]["id"] == check_id and query["postureQueries"][0]["timeout"] == -1
    error = assert_error(client.edge("POST", "/sessions", json={"serviceId": service_id}), 409, "INVALID_POSTURE")
    assert query["policyId"] in error["cause"]["message"] and query["policyId"] in error["cause"]["data"]
    failures = ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}/failed-service-requests")
    assert failures[0]["serviceId"] == service_id and failures[0]["sessionType"] == "Dial"
    assert failures[0]["policyFailures"][0]["checks"][0]["postureCheckId"] == check_id


def test_a_passing_response_opens_sessions_and_a_failing_one_closes_them(ziti_admin, guarded):
    identity_id, client, service_id, check_id = guarded
    reply = client.edge(
        "POST", "/posture-response", json={"id": check_id, "typeId": "DOMAIN", "domain": "corp.example"}
    )
    assert reply.status_code == 201 and reply.json()["data"] == {"services": []}
    assert client.edge_ok("GET", f"/services/{service_id}")["postureQueries"][0]["isPassing"] is True
    session = client.edge_ok("POST", "/sessions", json={"serviceId": service_id})
    assert ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}/posture-data")["domain"]["domain"] == "corp.example"
    client.edge_ok("POST", "/posture-response-bulk", json=[{"id": check_id, "typeId": "DOMAIN", "domain": "home"}])
    assert ziti_admin.mgmt("GET", f"/sessions/{session['id']}").status_code == 404


def test_one_passing_policy_is_enough(make_policy, guarded):
    identity_id, client, service_id, _ = guarded
    make_policy("service-policies", type="Dial", identityRoles=[f"@{identity_id}"], serviceRoles=[f"@{service_id}"])
    assert client.edge("POST", "/sessions", json={"serviceId": service_id}).status_code == 201


@pytest.mark.parametrize(
    "type_id, response, passes",
    [
        ("OS", {"typeId": "OS", "type": "windows", "version": "10.0.19045"}, True),
        ("OS", {"typeId": "OS", "type": "Windows", "version": "6.1.7601"}, False),
        ("OS", {"typeId": "OS", "type": "Linux", "version": "5.4"}, True),
        ("MAC", {"typeId": "MAC", "macAddresses": ["aa-bb-cc-dd-ee-ff"]}, True),
        ("MAC", {"typeId": "MAC", "macAddresses": ["00:11:22:33:44:55"]}, False),
        (
            "PROCESS",
            {"typeId": "PROCESS", "path": "C:\\av.exe", "isRunning": True, "hash": "abc", "signerFingerprints": ["FF"]},
            True,
        ),
        ("PROCESS", {"typeId": "PROCESS", "path": "C:\\av.exe", "isRunning": False, "hash": "abc"}, False),
        (
            "PROCESS",
            {"typeId": "PROCESS", "path": "C:\\av.exe", "isRunning": True, "hash": "zzz", "signerFingerprints": ["ff"]},
            False,
        ),
        (
            "PROCESS_MULTI",
            {"typeId": "PROCESS", "path": "/bin/av", "isRunning": True, "signerFingerprints": ["aa"]},
            True,
        ),
        (
            "PROCESS_MULTI",
            {"typeId": "PROCESS", "path": "/bin/other", "isRunning": True, "signerFingerprints": ["aa"]},
            False,
        ),
    ],
)
def test_posture_rules_per_type(
    ziti_admin, ziti_unique, make_client, make_service, make_policy, type_id, response, passes
):
    check_id = ziti_admin.create("posture-checks", {"name": ziti_unique(), "typeId": type_id, **BODIES[type_id]})
    identity_id, client = make_client()
    service_id = make_service()
    make_policy(
        "service-policies",
        type="Dial",
        identityRoles=[f"@{identity_id}"],
        serviceRoles=[f"@{service_id}"],
        postureCheckRoles=[f"@{check_id}"],
    )
    client.edge_ok("POST", "/posture-response", json={"id": check_id, **response})
    assert client.edge_ok("GET", f"/services/{service_id}")["postureQueries"][0]["isPassing"] is passes


def test_mfa_check_fails_without_mfa_and_reports_reprompts(
    ziti_admin, ziti_unique, make_client, make_service, make_policy
):
    check_id = ziti_admin.create(
        "posture-checks", {"name": ziti_unique(), "typeId": "MFA", "promptOnWake": True, "timeoutSeconds": 60}
    )
    identity_id, client = make_client()
    service_id = make_service()
    make_policy(
        "service-policies",
        type="Dial",
        identityRoles=[f"@{identity_id}"],
        serviceRoles=[f"@{service_id}"],
        postureCheckRoles=[f"@{check_id}"],
    )
    query = client.edge_ok("GET", f"/services/{service_id}")["postureQueries"][0]["postureQueries"][0]
    assert query["queryType"] == "MFA" and query["isPassing"] is False and query["promptOnWake"] is True
    assert query["timeout"] == 60
    reply = client.edge_ok(
        "POST", "/posture-response", json={"id": check_id, "typeId": "ENDPOINT_STATE", "woken": True}
    )
    assert [(s["id"], s["postureQueryType"]) for s in reply["services"]] == [(service_id, "MFA")]
    woken = ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}/posture-data")["apiSessionPostureData"]
    assert list(woken.values())[0]["endpointState"]["wokenAt"]


def test_posture_response_needs_its_type_fields(make_client):
    _, client = make_client()
    assert_error(client.edge("POST", "/posture-response", json={"id": "x", "typeId": "OS"}), 400, "COULD_NOT_VALIDATE")
    assert_error(
        client.edge("POST", "/posture-response", json={"id": "x", "typeId": "NOPE"}),
        400,
        "COULD_NOT_VALIDATE",
        "typeId",
    )
    assert_error(
        client.edge("POST", "/posture-response", json={"typeId": "DOMAIN", "domain": "d"}),
        400,
        "COULD_NOT_VALIDATE",
        "id",
    )


def test_deleting_a_check_strips_it_from_policies(ziti_admin, guarded):
    identity_id, client, service_id, check_id = guarded
    policy_id = client.edge_ok("GET", f"/services/{service_id}")["postureQueries"][0]["policyId"]
    ziti_admin.mgmt_ok("DELETE", f"/posture-checks/{check_id}")
    assert ziti_admin.mgmt_ok("GET", f"/service-policies/{policy_id}")["postureCheckRoles"] == []
    assert client.edge("POST", "/sessions", json={"serviceId": service_id}).status_code == 201
