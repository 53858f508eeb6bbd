"""A router process runs its control channels and its edge in one event loop: ``router.members.ControllerMembers``
owns it, ``router.server.EdgeRouter`` runs in it, so a push (a route through this router) is handled where it
arrives. Built here in this process from an enrolled router's data folder, as ``ziti-router run`` builds it."""

from __future__ import annotations

import threading

from harness.dataplane.sync import SyncDataPlane, echo
from harness.processes.quickstart import new_quickstart
from router.enroll import enrolled_controllers, load
from router.members import ControllerMembers
from router.server import EdgeRouter
from tests.ctrl.support import restrict_to, terminators_on, wait_until


def own_threads() -> set[str]:
    """Threads by name, but the thread pools' workers (their number varies)."""
    return {t.name for t in threading.enumerate() if t.is_alive() and not t.name.startswith(("asyncio_", "Thread"))}


def router_from(data_dir) -> tuple[ControllerMembers, EdgeRouter]:
    config, pems = load(data_dir)
    members = ControllerMembers(
        enrolled_controllers(config),
        data=data_dir,
        cert_pem=pems["cert"],
        key_pem=pems["key"],
        server_cert_pem=pems["server_cert"],
        ca_pem=pems["ca"],
    )
    return members.connect(), EdgeRouter(members, "127.0.0.1", 0, advertise="127.0.0.1")


def test_the_edge_runs_in_the_control_channels_loop_serves_there_and_ends_with_it(
    network, admin, make_router, tmp_path, ziti_unique
):
    enrolled = make_router(start=False)
    before = own_threads()
    members, router = router_from(enrolled.data_dir)
    try:
        router.start()
        assert router.loop is members.loop
        assert own_threads() - before == {"router-loop"}  # no thread for the edge, none per control channel
        stem = ziti_unique("oneloop")
        restrict_to(admin, stem, [enrolled.id])
        qs = new_quickstart(
            admin, tmp_path / "ids", stem, controller_url=network.local.https_url, router_url=router.url
        )
        with SyncDataPlane.from_identity_file(qs.binder) as host, SyncDataPlane.from_identity_file(qs.dialer) as guest:
            host.bind(qs.service, echo)
            wait_until(lambda: terminators_on(admin, enrolled.id), what="the binder's terminator")
            with guest.dial(qs.service) as conn:
                conn.sendall(b"one loop")
                assert conn.recv_exactly(8) == b"one loop"
    finally:
        router.stop()
        members.close()
    assert own_threads() - before == set()
    assert admin.mgmt_ok("GET", f"/edge-routers/{enrolled.id}")["isOnline"] is False
