"""A router as its own process: enrolled from a JWT made over HTTP, online over the control channel,
offline within 5 s of a SIGKILL or of going silent, back online when it runs again."""

from __future__ import annotations

import signal
import stat
import time
from datetime import datetime, timezone

import jwt
import pytest

from controller.fabric.state import Link
from harness.dataplane.sync import SyncDataPlane, echo
from harness.processes.quickstart import new_quickstart
from harness.processes.routers import RouterError, RouterProcess
from tests.ctrl.support import restrict_to, run_router, terminators_on, wait_until

OFFLINE_WITHIN = 5.0


def test_a_router_enrolled_from_a_jwt_runs_as_its_own_process_and_is_listed_online_at_its_own_url(
    network, admin, make_router
):
    router = make_router(enroll=False)
    token = router.edge_listing()["enrollmentJwt"]  # the controller lists it until the router enrolls
    router.start()

    listed = router.edge_listing()
    assert listed["isOnline"] is True and listed["isVerified"] is True
    assert listed["supportedProtocols"] == {"tls": router.ready["url"]}
    embedded = admin.mgmt_ok("GET", "/edge-routers", params={"filter": 'name = "quickstart-router"'})[0]
    assert embedded["isOnline"] and embedded["supportedProtocols"]["tls"] != router.ready["url"]
    assert jwt.decode(token, options={"verify_signature": False})["ctrls"] == [network.listener.address]
    [member] = admin.mgmt_ok("GET", "/controllers")
    assert member["ctrlAddress"] == network.listener.address
    assert stat.S_IMODE(router.data_dir.stat().st_mode) == 0o700
    assert {stat.S_IMODE(f.stat().st_mode) for f in router.data_dir.iterdir()} == {0o600}
    assert not router.jwt_file.exists()  # a credential until used: gone once enrolled
    assert "BEGIN" not in router.log.read_text()  # no key or certificate in the log


def test_enroll_refuses_a_used_jwt_and_a_file_that_is_no_jwt(make_router, tmp_path):
    router = make_router(enroll=False)
    used = tmp_path / "used.jwt"
    used.write_text(router.edge_listing()["enrollmentJwt"])
    router.enroll()
    again = run_router("enroll", str(used), "--data", str(router.data_dir))
    assert again.returncode == 1
    assert again.stderr.strip().splitlines()[-1].startswith("error: the controller refused the enrollment (400)")
    used.write_text("not a jwt")
    bad = run_router("enroll", str(used), "--data", str(router.data_dir))
    assert bad.returncode == 2 and "is not an enrollment JWT" in bad.stderr


def test_a_harness_router_enrolled_before_without_its_data_folder_fails_in_one_line(admin, make_router, tmp_path):
    router = make_router(start=False)
    again = RouterProcess(admin, router.name, tmp_path / "elsewhere")  # the same router, found by name
    with pytest.raises(RouterError, match=rf"^router {router.name} has no enrollment JWT: enrolled before") as caught:
        again.start(timeout=5)
    assert caught.value.code == 3 and again.id == router.id and not again.data_dir.exists()


def test_run_without_an_enrolled_folder_exits_2_and_an_unreachable_controller_exits_3(make_router, tmp_path):
    missing = run_router("run", "--data", str(tmp_path / "nothing"))
    assert missing.returncode == 2 and "run enroll first" in missing.stderr
    router = make_router(start=False)
    config = router.data_dir / "config.json"
    config.write_text(config.read_text().replace('"tls:127.0.0.1:', '"tls:127.0.0.1:1'))  # a port nobody serves
    unreachable = run_router("run", "--data", str(router.data_dir))
    assert unreachable.returncode == 3 and "controller" in unreachable.stderr


def test_sigkill_marks_the_router_offline_within_5s_removes_its_terminators_and_a_restart_brings_it_back(
    network, admin, make_router, tmp_path, ziti_unique, timeline
):
    router = make_router()
    stem = ziti_unique("kill")
    qs = new_quickstart(admin, tmp_path, stem, controller_url=network.local.https_url, router_url=router.ready["url"])
    restrict_to(admin, stem, [router.id])
    with SyncDataPlane.from_identity_file(qs.binder) as host:
        host.bind(qs.service, echo)
        wait_until(lambda: terminators_on(admin, router.id), what="a terminator on the process router")
        [binder] = admin.mgmt_ok("GET", "/identities", params={"filter": f'name = "{stem}-binder"'})
        assert binder["hasEdgeRouterConnection"] is True

        fabric = network.controller.routing.fabric
        fabric.link_up(Link(f"{stem}-link", router.id, "someone-else", datetime.now(timezone.utc)))
        killed_at = time.monotonic()
        router.kill()
        wait_until(lambda: not router.edge_listing()["isOnline"], timeout=OFFLINE_WITHIN, what="offline after SIGKILL")
        assert time.monotonic() - killed_at < OFFLINE_WITHIN
    # the offline event comes last, once the terminators, connections and fabric state are gone
    timeline.wait("router", "offline", router_id=router.id, timeout=OFFLINE_WITHIN)
    assert router.edge_listing()["supportedProtocols"] == {}
    assert terminators_on(admin, router.id) == []
    assert [link for link in fabric.links() if link.touches(router.id)] == []  # fabric.router_gone ran
    # the killed router never reported its channels closing: going offline takes them
    assert admin.mgmt_ok("GET", f"/identities/{binder['id']}")["hasEdgeRouterConnection"] is False

    restarted = router.start().ready
    assert router.edge_listing()["isOnline"]
    assert router.edge_listing()["supportedProtocols"] == {"tls": restarted["url"]}
    timeline.wait("router", "online", router_id=router.id, count=2)


def test_a_stopped_router_misses_heartbeats_goes_offline_and_comes_back_when_it_resumes(network, make_router, timeline):
    router = make_router()
    router.pause()  # SIGSTOP
    try:
        wait_until(lambda: not router.edge_listing()["isOnline"], timeout=OFFLINE_WITHIN, what="offline after SIGSTOP")
    finally:
        router.resume()  # SIGCONT
    wait_until(lambda: router.edge_listing()["isOnline"], what="online again after SIGCONT")
    assert router.edge_listing()["supportedProtocols"] == {"tls": router.ready["url"]}
    assert len(timeline.wait("router", "online", router_id=router.id, count=2)) == 2


def test_a_disabled_router_is_disconnected_and_kept_out_until_enabled_again(admin, make_router, timeline, ctrl_log):
    router = make_router()
    admin.mgmt_ok("PATCH", f"/edge-routers/{router.id}", json={"disabled": True})
    timeline.wait("router", "offline", router_id=router.id, timeout=OFFLINE_WITHIN)
    assert not router.edge_listing()["isOnline"]
    assert "the router was disabled" in ctrl_log.wait()[0]
    assert router.proc.poll() is None  # it keeps trying, and is refused at each handshake
    admin.mgmt_ok("PATCH", f"/edge-routers/{router.id}", json={"disabled": False})
    timeline.wait("router", "online", router_id=router.id, count=2)
    assert router.edge_listing()["isOnline"]


def test_sigterm_does_not_wait_for_a_client_stuck_in_its_tls_handshake(make_router):
    """A client that connected and never sent its TLS hello holds no stop: the router exits cleanly, within its
    stop bound (it used to wait for that handshake's own 10 s timeout and give up after 5 s)."""
    import socket
    from urllib.parse import urlsplit

    router = make_router()
    url = urlsplit(router.ready["url"])
    with socket.create_connection((url.hostname, url.port), timeout=10):  # silent: no ClientHello
        time.sleep(0.2)  # the router has accepted it and is waiting for the handshake
        router.signal(signal.SIGTERM)
        code = router.proc.wait(15)
    assert code == 0
    assert "took longer" not in router.log.read_text()
