"""A network of an embedded router and a process router enrolled from a JWT: they link, and a real SDK
dialing through one reaches a real SDK bound on the other (the circuit crosses the link)."""

from __future__ import annotations

from harness.dataplane.sync import SyncDataPlane, echo
from harness.processes.quickstart import new_quickstart
from tests.ctrl.support import terminators_on, wait_until


def embedded_router(admin) -> dict:
    return admin.mgmt_ok("GET", "/edge-routers", params={"filter": 'name = "quickstart-router"'})[0]


def linked(admin, a: str, b: str) -> list[dict]:
    return [
        link
        for link in admin.fabric.list_links()
        if {link["sourceRouter"]["id"], link["destRouter"]["id"]} == {a, b} and link["state"] == "Connected"
    ]


def split_routers(admin, stem: str, binder_router: str, dialer_router: str) -> None:
    """The binder may use only ``binder_router``, the dialer only ``dialer_router``; the service both."""
    for who, router_id in (("binder", binder_router), ("dialer", dialer_router)):
        admin.create(
            "edge-router-policies",
            {
                "name": f"{stem}-{who}-routers",
                "semantic": "AnyOf",
                "identityRoles": [f"#{stem}-{who}"],
                "edgeRouterRoles": [f"@{router_id}"],
            },
        )
    admin.create(
        "service-edge-router-policies",
        {
            "name": f"{stem}-routers",
            "semantic": "AnyOf",
            "serviceRoles": [f"#{stem}"],
            "edgeRouterRoles": [f"@{binder_router}", f"@{dialer_router}"],
        },
    )


def test_a_process_router_links_to_the_embedded_one_and_a_dial_crosses_the_link(
    network, admin, make_router, tmp_path, ziti_unique
):
    process, embedded = make_router(), embedded_router(admin)
    wait_until(lambda: linked(admin, process.id, embedded["id"]), what="a link between the two routers")
    stem = ziti_unique("hop")
    qs = new_quickstart(admin, tmp_path, stem, controller_url=network.local.https_url, router_url=process.ready["url"])
    split_routers(admin, stem, binder_router=embedded["id"], dialer_router=process.id)

    with SyncDataPlane.from_identity_file(qs.binder) as host, SyncDataPlane.from_identity_file(qs.dialer) as guest:
        host.bind(qs.service, echo)
        wait_until(lambda: terminators_on(admin, embedded["id"]), what="a terminator on the embedded router")
        with guest.dial(qs.service) as conn:
            conn.sendall(b"across the link")
            assert conn.recv_exactly(15) == b"across the link"

    [service] = admin.mgmt_ok("GET", "/services", params={"filter": f'name = "{qs.service}"'})
    [created] = network.controller.events.query("circuit", event_type="created", service_id=service["id"])
    assert created["path"]["nodes"] == [process.id, embedded["id"]]


def test_a_real_sdk_on_the_process_router_reaches_a_real_sdk_bound_on_the_embedded_router(
    real_sdk, network, admin, make_router, tmp_path, ziti_unique
):
    process, embedded = make_router(), embedded_router(admin)
    wait_until(lambda: linked(admin, process.id, embedded["id"]), what="a link between the two routers")
    stem = ziti_unique("sdkhop")
    qs = new_quickstart(admin, tmp_path, stem, controller_url=network.local.https_url, router_url=process.ready["url"])
    split_routers(admin, stem, binder_router=embedded["id"], dialer_router=process.id)

    host = real_sdk.popen("bind", qs.binder, qs.service)
    try:
        wait_until(lambda: terminators_on(admin, embedded["id"]), timeout=30, what="the SDK's terminator")
        assert "ECHO two routers" in real_sdk.run("dial", qs.dialer, qs.service, "two routers", timeout=60)
    finally:
        host.kill()
        host.communicate(timeout=10)


def test_a_dial_entering_the_embedded_router_reaches_a_host_on_the_process_router_by_a_pushed_route(
    network, admin, make_router, tmp_path, ziti_unique
):
    """The controller pushes the route to the process router over its control channel (``route``) while it answers
    the embedded one, which then waits for the process router's word over the link: the dial completes only so."""
    process, embedded = make_router(), embedded_router(admin)
    wait_until(lambda: linked(admin, process.id, embedded["id"]), what="a link between the two routers")
    stem = ziti_unique("pushhop")
    qs = new_quickstart(admin, tmp_path, stem, controller_url=network.local.https_url, router_url=process.ready["url"])
    split_routers(admin, stem, binder_router=process.id, dialer_router=embedded["id"])

    with SyncDataPlane.from_identity_file(qs.binder) as host, SyncDataPlane.from_identity_file(qs.dialer) as guest:
        host.bind(qs.service, echo)
        wait_until(lambda: terminators_on(admin, process.id), what="a terminator on the process router")
        for round in range(3):
            with guest.dial(qs.service) as conn:
                conn.sendall(b"pushed %d" % round)
                assert conn.recv_exactly(8) == b"pushed %d" % round

    [service] = admin.mgmt_ok("GET", "/services", params={"filter": f'name = "{qs.service}"'})
    created = network.controller.events.query("circuit", event_type="created", service_id=service["id"])
    assert [c["path"]["nodes"] for c in created] == [[embedded["id"], process.id]] * 3
