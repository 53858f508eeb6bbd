"""Sessions: the real checks in the real order, reuse, visibility and automatic deletion."""

from __future__ import annotations

import pytest

from tests.support import assert_error


@pytest.fixture
def reachable(make_client, make_service, make_edge_router, make_policy):
    """A client that may dial a service over one shared edge router: ``(identity_id, client, service_id, router_id)``."""

    def make(types=("Dial",), attrs=("sess",)):
        identity_id, client = make_client(attrs=list(attrs))
        service_id, router_id = make_service(), make_edge_router()
        for ptype in types:
            make_policy(
                "service-policies", type=ptype, identityRoles=[f"@{identity_id}"], serviceRoles=[f"@{service_id}"]
            )
        make_policy("edge-router-policies", identityRoles=[f"@{identity_id}"], edgeRouterRoles=[f"@{router_id}"])
        make_policy("service-edge-router-policies", serviceRoles=[f"@{service_id}"], edgeRouterRoles=[f"@{router_id}"])
        return identity_id, client, service_id, router_id

    return make


def test_create_returns_the_session_with_its_edge_routers(reachable):
    identity_id, client, service_id, router_id = reachable()
    response = client.edge("POST", "/sessions", json={"serviceId": service_id})
    assert response.status_code == 201
    data = response.json()["data"]
    assert data["id"].startswith("c") and len(data["id"]) == 25 and data["token"]
    assert data["type"] == "Dial" and data["serviceId"] == service_id and data["identityId"] == identity_id
    assert data["service"]["id"] == service_id and data["apiSessionId"] == data["apiSession"]["id"]
    assert [r["id"] for r in data["edgeRouters"]] == [router_id]
    assert data["edgeRouters"][0]["urls"] == {} and data["edgeRouters"][0]["name"]


def test_a_repeat_returns_the_same_session(reachable):
    _, client, service_id, _ = reachable(types=("Dial", "Bind"))
    first = client.edge_ok("POST", "/sessions", json={"serviceId": service_id, "type": "Dial"})
    again = client.edge_ok("POST", "/sessions", json={"serviceId": service_id})
    bind = client.edge_ok("POST", "/sessions", json={"serviceId": service_id, "type": "Bind"})
    assert again["id"] == first["id"] and bind["id"] != first["id"] and bind["type"] == "Bind"


def test_checks_come_in_the_real_order(reachable, make_service, make_policy, make_client):
    identity_id, client, service_id, _ = reachable()
    assert_error(
        client.edge("POST", "/sessions", json={"serviceId": service_id, "type": "Invalid"}),
        400,
        "COULD_NOT_VALIDATE",
        "type",
    )
    assert_error(client.edge("POST", "/sessions", json={"serviceId": "missing"}), 404, "NOT_FOUND")
    assert_error(client.edge("POST", "/sessions", json={}), 404, "NOT_FOUND")
    invisible = make_service()
    assert_error(client.edge("POST", "/sessions", json={"serviceId": invisible}), 404, "NOT_FOUND")
    error = assert_error(
        client.edge("POST", "/sessions", json={"serviceId": service_id, "type": "Bind"}),
        400,
        "COULD_NOT_VALIDATE",
        "ServiceId",
    )
    assert error["cause"]["reason"] == "service not found"
    no_router = make_service()
    make_policy("service-policies", type="Dial", identityRoles=[f"@{identity_id}"], serviceRoles=[f"@{no_router}"])
    assert_error(client.edge("POST", "/sessions", json={"serviceId": no_router}), 400, "NO_EDGE_ROUTERS_AVAILABLE")


def test_list_get_delete_on_the_client_api(ziti_admin, reachable):
    identity_id, client, service_id, _ = reachable()
    _, other, other_service, _ = reachable()
    mine = client.edge_ok("POST", "/sessions", json={"serviceId": service_id})
    theirs = other.edge_ok("POST", "/sessions", json={"serviceId": other_service})
    assert [s["id"] for s in client.edge_ok("GET", "/sessions")] == [mine["id"]]
    assert client.edge_ok("GET", f"/sessions/{mine['id']}")["edgeRouters"]
    assert_error(client.edge("GET", f"/sessions/{theirs['id']}"), 404, "NOT_FOUND")
    assert_error(client.edge("DELETE", f"/sessions/{theirs['id']}"), 404, "NOT_FOUND")
    assert {mine["id"], theirs["id"]} <= {s["id"] for s in ziti_admin.edge_ok("GET", "/sessions", params={"limit": -1})}
    client.edge_ok("DELETE", f"/sessions/{mine['id']}")
    assert client.edge_ok("GET", "/sessions") == []


def test_management_view_adds_service_policies(ziti_admin, reachable):
    _, client, service_id, _ = reachable()
    session = client.edge_ok("POST", "/sessions", json={"serviceId": service_id})
    data = ziti_admin.mgmt_ok("GET", f"/sessions/{session['id']}")
    assert len(data["servicePolicies"]) == 1 and data["servicePolicies"][0]["entity"] == "service-policies"
    found = ziti_admin.mgmt_ok("GET", "/sessions", params={"filter": f'service = "{service_id}" and type = "Dial"'})
    assert [s["id"] for s in found] == [session["id"]]
    ziti_admin.mgmt_ok("DELETE", f"/sessions/{session['id']}")
    assert ziti_admin.mgmt("GET", f"/sessions/{session['id']}").status_code == 404


def test_sessions_go_with_their_service(ziti_admin, reachable):
    _, client, service_id, _ = reachable()
    session = client.edge_ok("POST", "/sessions", json={"serviceId": service_id})
    ziti_admin.mgmt_ok("DELETE", f"/services/{service_id}")
    assert ziti_admin.mgmt("GET", f"/sessions/{session['id']}").status_code == 404


def test_sessions_go_with_their_api_session(ziti_admin, reachable):
    _, client, service_id, _ = reachable()
    session = client.edge_ok("POST", "/sessions", json={"serviceId": service_id})
    client.edge_ok("DELETE", "/current-api-session")
    assert ziti_admin.mgmt("GET", f"/sessions/{session['id']}").status_code == 404


def test_sessions_go_when_access_is_lost(ziti_admin, reachable, make_policy):
    identity_id, client, service_id, _ = reachable(types=(), attrs=("keeper",))
    make_policy("service-policies", type="Dial", identityRoles=["#keeper"], serviceRoles=[f"@{service_id}"])
    session = client.edge_ok("POST", "/sessions", json={"serviceId": service_id})
    ziti_admin.mgmt_ok("PATCH", f"/identities/{identity_id}", json={"roleAttributes": ["other"]})
    assert ziti_admin.mgmt("GET", f"/sessions/{session['id']}").status_code == 404


def test_unrelated_changes_keep_sessions(ziti_admin, reachable, make_policy):
    identity_id, client, service_id, _ = reachable(attrs=("stay",))
    session = client.edge_ok("POST", "/sessions", json={"serviceId": service_id})
    ziti_admin.mgmt_ok("PATCH", f"/identities/{identity_id}", json={"roleAttributes": ["stay", "more"]})
    make_policy("service-policies", type="Bind", identityRoles=["#stay"], serviceRoles=["#all"])
    assert ziti_admin.mgmt("GET", f"/sessions/{session['id']}").status_code == 200


def test_admins_keep_sessions_when_access_is_lost(ziti_admin, make_client, make_service, make_edge_router, make_policy):
    identity_id, client = make_client(attrs=["adm"], is_admin=True)
    service_id, router_id = make_service(), make_edge_router()
    policy_id = make_policy("service-policies", type="Dial", identityRoles=["#adm"], serviceRoles=[f"@{service_id}"])
    make_policy("edge-router-policies", identityRoles=["#adm"], edgeRouterRoles=[f"@{router_id}"])
    make_policy("service-edge-router-policies", serviceRoles=[f"@{service_id}"], edgeRouterRoles=["#all"])
    session = client.edge_ok("POST", "/sessions", json={"serviceId": service_id})
    ziti_admin.mgmt_ok("DELETE", f"/service-policies/{policy_id}")
    assert ziti_admin.mgmt("GET", f"/sessions/{session['id']}").status_code == 200
