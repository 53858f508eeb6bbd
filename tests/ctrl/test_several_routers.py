"""Several edge routers at once: the embedded one and process routers, each with its own url in every
listing SDKs read; edge router policies decide which ones an identity and a service may use."""

from __future__ import annotations

from harness.dataplane import flows
from harness.dataplane.sync import SyncDataPlane, echo, load_identity_file
from harness.processes.quickstart import new_quickstart
from tests.ctrl.support import restrict_to, terminators_on, wait_until


def embedded_router(admin) -> dict:
    return admin.mgmt_ok("GET", "/edge-routers", params={"filter": 'name = "quickstart-router"'})[0]


def test_an_identity_allowed_on_two_routers_gets_both_with_their_own_urls_in_every_listing(
    network, admin, make_router, tmp_path, ziti_unique
):
    process, embedded = make_router(), embedded_router(admin)
    other = make_router()  # online too, but no policy lets this network use it
    stem = ziti_unique("two")
    qs = new_quickstart(admin, tmp_path, stem, controller_url=network.local.https_url, router_url=process.ready["url"])
    restrict_to(admin, stem, [embedded["id"], process.id])
    expected = {embedded["name"]: embedded["supportedProtocols"]["tls"], process.name: process.ready["url"]}

    client, _ = load_identity_file(qs.dialer)
    with client:
        session = flows.dial(client, qs.service)
        assert {r["name"]: r["supportedProtocols"]["tls"] for r in session["edgeRouters"]} == expected
        assert {r["name"]: r["urls"]["tls"] for r in session["edgeRouters"]} == expected
        assert all(r["isOnline"] for r in session["edgeRouters"])
        mine = client.edge_ok("GET", "/current-identity/edge-routers")
        assert {r["name"]: r["supportedProtocols"]["tls"] for r in mine} == expected
        [service] = client.edge_ok("GET", "/services", params={"filter": f'name = "{qs.service}"'})
        listed = client.edge_ok("GET", f"/services/{service['id']}/edge-routers")["edgeRouters"]
        assert {r["name"]: r["supportedProtocols"]["tls"] for r in listed} == expected
    assert other.edge_listing()["isOnline"] and other.name not in expected

    with SyncDataPlane.from_identity_file(qs.binder) as host, SyncDataPlane.from_identity_file(qs.dialer) as guest:
        host.bind(qs.service, echo)
        # the harness binds on one of the two (the C SDK binds on each); either way the dial reaches it
        wait_until(
            lambda: terminators_on(admin, process.id) + terminators_on(admin, embedded["id"]), what="a terminator"
        )
        with guest.dial(qs.service) as conn:
            conn.sendall(b"two routers")
            assert conn.recv_exactly(11) == b"two routers"


def test_a_real_sdk_binds_and_dials_through_a_process_router(
    real_sdk, network, admin, make_router, tmp_path, ziti_unique
):
    process = make_router()
    stem = ziti_unique("sdk")
    qs = new_quickstart(admin, tmp_path, stem, controller_url=network.local.https_url, router_url=process.ready["url"])
    restrict_to(admin, stem, [process.id])

    out = real_sdk.run("both", qs.binder, qs.dialer, qs.service, "via a process router")
    assert "ECHO via a process router" in out
    [service] = admin.mgmt_ok("GET", "/services", params={"filter": f'name = "{qs.service}"'})
    events = network.controller.events.query("circuit", event_type="created", service_id=service["id"])
    assert events and {e["router_id"] for e in events} == {process.id}


def test_a_dialer_logged_in_by_oidc_echoes_through_a_process_router(network, admin, make_router, tmp_path, ziti_unique):
    """The process router's hello goes over the control channel with an OIDC access token, as in-process."""
    process = make_router()
    stem = ziti_unique("oidc")
    qs = new_quickstart(admin, tmp_path, stem, controller_url=network.local.https_url, router_url=process.ready["url"])
    restrict_to(admin, stem, [process.id])
    client, identity = load_identity_file(qs.dialer)
    client.logout()
    client.login_cert(oidc="c")
    assert client.token is None and client.session_token.count(".") == 2  # a JWT, not a zt-session
    with SyncDataPlane.from_identity_file(qs.binder) as host, SyncDataPlane(client, identity) as guest:
        host.bind(qs.service, echo)
        wait_until(lambda: terminators_on(admin, process.id), what="a terminator on the process router")
        with guest.dial(qs.service) as conn:
            conn.sendall(b"hello over oidc")
            assert conn.recv_exactly(15) == b"hello over oidc"
    [service] = admin.mgmt_ok("GET", "/services", params={"filter": f'name = "{qs.service}"'})
    assert network.controller.events.query("circuit", event_type="created", service_id=service["id"])
