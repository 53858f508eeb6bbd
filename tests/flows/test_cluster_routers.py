"""A router process in a controller cluster: a control channel to every member, online on each, dials that survive
the death of the member it enrolled with, and a member that joins later reached too."""

from __future__ import annotations

import time

from harness.client.filters import name_is
from harness.dataplane.sync import SyncDataPlane, echo
from harness.processes.quickstart import new_quickstart
from harness.processes.routers import RouterProcess
from tests.ctrl.support import restrict_to, wait_until

#: longer than a member's heartbeat timeout (3 s): a router a live member lost would show offline by then
WATCH_SECONDS = 4.5


def online_on(cluster, index: int, router_id: str) -> bool:
    """``isOnline`` of the router as member ``index``'s management API lists it."""
    with cluster.client(index) as client:
        [row] = client.mgmt_ok("GET", "/edge-routers", params={"filter": f'id = "{router_id}"'})
        return row["isOnline"]


def terminator_ids(cluster, index: int, router_id: str) -> set[str]:
    with cluster.client(index) as client:
        rows = client.mgmt_ok("GET", "/terminators", params={"filter": f'router = "{router_id}"', "limit": 500})
        return {row["id"] for row in rows}


def echoes(guest: SyncDataPlane, service: str, text: bytes) -> bytes:
    with guest.dial(service) as conn:
        conn.sendall(text)
        return conn.recv_exactly(len(text))


def test_a_router_stays_online_and_dialable_on_the_members_left_when_the_one_it_enrolled_with_dies(
    ziti_cluster, tmp_path
):
    cluster = ziti_cluster
    with cluster.client(0) as admin0:  # the router enrolls with member 1 (ctrl1), which its JWT names first
        router = RouterProcess(admin0, "ha-router", tmp_path / "routers").start()
    wait_until(lambda: all(online_on(cluster, i, router.id) for i in range(3)), what="online on every member")

    with cluster.client(1) as admin1:  # the SDK identities name member 2 (ctrl2), which stays up
        qs = new_quickstart(admin1, tmp_path / "qs", "ha", controller_url=cluster.members[1].url, router_url=router.url)
        restrict_to(admin1, "ha", [router.id])
    with SyncDataPlane.from_identity_file(qs.binder) as host, SyncDataPlane.from_identity_file(qs.dialer) as guest:
        host.bind(qs.service, echo)
        # the router's terminator is a store write: replicated, every member lists it
        wait_until(lambda: all(terminator_ids(cluster, i, router.id) for i in range(3)), what="terminator everywhere")
        assert len({frozenset(terminator_ids(cluster, i, router.id)) for i in range(3)}) == 1
        assert echoes(guest, qs.service, b"before") == b"before"

        cluster.kill(0)
        deadline = time.monotonic() + WATCH_SECONDS
        while time.monotonic() < deadline:  # past the heartbeat timeout: the live members still list it online
            assert online_on(cluster, 1, router.id) and online_on(cluster, 2, router.id)
            time.sleep(0.25)
        assert terminator_ids(cluster, 1, router.id)  # the dead member's channel took no terminator with it
        assert echoes(guest, qs.service, b"after the kill") == b"after the kill"

        cluster.restart(0)  # the router kept dialing the dead member: back online there once it is up
        wait_until(lambda: online_on(cluster, 0, router.id), what="online on the restarted member")
        assert echoes(guest, qs.service, b"all back") == b"all back"
    router.stop()


def test_a_member_that_joins_later_gets_the_routers_channel_and_the_router_keeps_the_list(ziti_make_cluster, tmp_path):
    cluster = ziti_make_cluster(2)
    with cluster.client(0) as admin0:
        router = RouterProcess(admin0, "late-router", tmp_path / "routers").start()
    wait_until(lambda: online_on(cluster, 0, router.id) and online_on(cluster, 1, router.id), what="online on both")

    cluster.add_member()  # the members tell the routers connected to them of the new one
    wait_until(lambda: online_on(cluster, 2, router.id), what="online on the member that joined")

    router.stop()
    cluster.kill(0)  # the member the router enrolled with is gone: it starts from the list it kept
    router.start()
    wait_until(lambda: online_on(cluster, 1, router.id) and online_on(cluster, 2, router.id), what="back on both")
    with cluster.client(2) as admin2:
        [row] = admin2.mgmt_ok("GET", "/edge-routers", params={"filter": name_is("late-router")})
        assert row["isOnline"]
    router.stop()


def test_a_member_losing_the_routers_channel_takes_it_offline_there_only_and_keeps_its_terminators(
    ziti_cluster, tmp_path
):
    cluster = ziti_cluster
    with cluster.client(0) as admin0:
        router = RouterProcess(admin0, "kept-router", tmp_path / "routers").start()
        qs = new_quickstart(
            admin0, tmp_path / "qs", "kept", controller_url=cluster.members[0].url, router_url=router.url
        )
        restrict_to(admin0, "kept", [router.id])
    with SyncDataPlane.from_identity_file(qs.binder) as host:
        host.bind(qs.service, echo)
        wait_until(lambda: all(terminator_ids(cluster, i, router.id) for i in range(3)), what="terminator everywhere")
        with cluster.client(0) as admin0:
            before = admin0.mgmt_ok("GET", "/terminators", params={"filter": f'router = "{router.id}"'})

        cluster.pause(2)  # silent past the router's heartbeat timeout: the router closes its channel to ctrl3
        time.sleep(WATCH_SECONDS + 1)
        cluster.resume(2)  # ctrl3 then sees the channel gone: the router is offline there, until it reconnects
        wait_until(lambda: online_on(cluster, 2, router.id), what="back online on the resumed member")
        with cluster.client(0) as admin0:
            after = admin0.mgmt_ok("GET", "/terminators", params={"filter": f'router = "{router.id}"'})
        # the same records: never deleted (cluster-wide) and created again
        assert [(t["id"], t["createdAt"]) for t in after] == [(t["id"], t["createdAt"]) for t in before]
        assert online_on(cluster, 0, router.id) and online_on(cluster, 1, router.id)
    router.stop()


def test_each_members_embedded_router_is_online_on_every_member_and_stays_so_when_another_member_dies(
    ziti_make_cluster,
):
    options = ("--router-port", "0", "--http-port", "0", "--ctrl-port", "0", "--log-level", "warning")
    cluster = ziti_make_cluster(3, options=options)
    names = {f"router-ctrl{i + 1}" for i in range(3)}

    def online(index: int) -> set[str]:
        with cluster.client(index) as client:
            return {row["name"] for row in client.mgmt_ok("GET", "/edge-routers") if row["isOnline"]}

    wait_until(lambda: all(online(i) == names for i in range(3)), what="every router online on every member")
    cluster.kill(0)  # its router dies with it
    deadline = time.monotonic() + WATCH_SECONDS
    while time.monotonic() < deadline:
        assert {"router-ctrl2", "router-ctrl3"} <= online(1) and {"router-ctrl2", "router-ctrl3"} <= online(2)
        time.sleep(0.25)
    wait_until(lambda: "router-ctrl1" not in online(1), what="the dead member's router offline")


def test_a_routers_enrollment_jwt_names_every_member_and_it_starts_with_the_issuing_one_dead(ziti_cluster, tmp_path):
    import jwt

    cluster = ziti_cluster
    with cluster.client(0) as admin0:
        router = RouterProcess(admin0, "jwt-router", tmp_path / "routers")
        router.create()
        token = admin0.management.detail_edge_router(router.id)["enrollmentJwt"]
        members = {row["id"]: row["ctrlAddress"] for row in admin0.mgmt_ok("GET", "/controllers")}
        router.enroll()  # over member 1's API, with the control channels its JWT names
    ctrls = jwt.decode(token, options={"verify_signature": False})["ctrls"]
    assert sorted(ctrls) == sorted(members.values()) and len(set(ctrls)) == 3
    assert ctrls[0] == members[cluster.members[0].instance_id]  # the issuing member first, as a single one's
    cluster.kill(0)  # before the router's first start: it knows only what its JWT named
    router.start()
    wait_until(lambda: online_on(cluster, 1, router.id) and online_on(cluster, 2, router.id), what="online")
    router.stop()
