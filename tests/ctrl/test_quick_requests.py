"""The requests of every dial (``controller.ctrl.messages.QUICK``) are answered in the control channel's loop while
the store is free and they only read; one that would write (here: the dialer's API session is due its activity
flush) is answered on a worker instead, exactly as before, and its write is made. Through a router process."""

from __future__ import annotations

import time
from datetime import timedelta

import controller.model.api_session
from harness.dataplane.sync import SyncDataPlane, echo
from harness.processes.quickstart import new_quickstart
from tests.ctrl.support import restrict_to, terminators_on, wait_until
from tests.support import store_held


def stored_activity(network, identity_id: str) -> list[str]:
    return sorted(
        record["last_activity_at"]
        for record in network.controller.store.all("api_sessions")
        if record["identity_id"] == identity_id
    )


def test_a_dial_that_must_write_is_answered_and_its_write_made(
    network, admin, make_router, tmp_path, ziti_unique, monkeypatch
):
    router = make_router()
    stem = ziti_unique("quick")
    restrict_to(admin, stem, [router.id])
    qs = new_quickstart(admin, tmp_path / "ids", stem, controller_url=network.local.https_url, router_url=router.url)
    [dialer] = admin.mgmt_ok("GET", "/identities", params={"filter": f'name="{stem}-dialer"'})
    with SyncDataPlane.from_identity_file(qs.binder) as host, SyncDataPlane.from_identity_file(qs.dialer) as guest:
        host.bind(qs.service, echo)
        wait_until(lambda: terminators_on(admin, router.id), what="the binder's terminator")
        with guest.dial(qs.service) as conn:  # read-only: answered in the loop
            conn.sendall(b"in the loop")
            assert conn.recv_exactly(11) == b"in the loop"
        before = stored_activity(network, dialer["id"])
        time.sleep(0.01)  # the stamp moves (its resolution is finer)
        monkeypatch.setattr(controller.model.api_session, "ACTIVITY_FLUSH", timedelta(0))  # every check writes
        with guest.dial(qs.service) as conn:
            conn.sendall(b"on a worker")
            assert conn.recv_exactly(11) == b"on a worker"
        after = stored_activity(network, dialer["id"])
    assert before and len(after) == len(before) and after != before


def test_a_dial_while_another_thread_holds_the_store_waits_for_it_on_a_worker(
    network, admin, make_router, tmp_path, ziti_unique
):
    router = make_router()
    stem = ziti_unique("busy")
    restrict_to(admin, stem, [router.id])
    qs = new_quickstart(admin, tmp_path / "ids", stem, controller_url=network.local.https_url, router_url=router.url)
    with SyncDataPlane.from_identity_file(qs.binder) as host, SyncDataPlane.from_identity_file(qs.dialer) as guest:
        host.bind(qs.service, echo)
        wait_until(lambda: terminators_on(admin, router.id), what="the binder's terminator")
        guest.dial(qs.service).close()  # sessions and channels made before the store is held
        with store_held(network.controller.store, 1.0) as released:
            with guest.dial(qs.service) as conn:
                connected = time.monotonic()
                conn.sendall(b"waited")
                assert conn.recv_exactly(6) == b"waited"
    assert released and connected >= released[0]  # answered once the store was free, not in the loop meanwhile
