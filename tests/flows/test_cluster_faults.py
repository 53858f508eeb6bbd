"""A three-member cluster as processes: kill -9 of the leader, restart, no quorum, a paused member."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from harness.client import ApiError

WRITERS = 4
WRITES_PER_WRITER = 40
LOAD_SECONDS = 30.0


def _identity(name: str) -> dict:
    return {"name": name, "type": "Device", "isAdmin": False}


def _names(client) -> set[str]:
    return {row["name"] for row in client.mgmt.iterate("listIdentities", page_size=500)}


def _converged(cluster, indexes, wanted: set[str], timeout: float = 15.0) -> dict[int, set[str]]:
    deadline = time.monotonic() + timeout
    while True:
        seen = {}
        for index in indexes:
            with cluster.client(index) as client:
                seen[index] = _names(client)
        if all(wanted <= names for names in seen.values()) or time.monotonic() > deadline:
            return seen
        time.sleep(0.2)


def test_kill_9_of_the_leader_under_writes_loses_no_acknowledged_write(ziti_cluster):
    cluster = ziti_cluster
    old = cluster.leader()
    acknowledged: list[str] = []
    lock = threading.Lock()
    killed = threading.Event()
    started = time.monotonic()

    def signed_in_elsewhere(failed: int):
        """A client of a member the kill spares (the old leader is killed a quarter of the way in), or None."""
        for index in (i for i in range(3) if i != old and i != failed):
            try:
                return index, cluster.client(index)
            except (ApiError, httpx.HTTPError):  # that member is electing or refusing too: the next one
                continue
        return failed, None

    def writer(number: int) -> None:
        target = number % 3
        client = cluster.client(target)
        for seq in range(WRITES_PER_WRITER):
            if time.monotonic() - started > LOAD_SECONDS:
                break
            if seq == WRITES_PER_WRITER // 4 and number == 0:
                cluster.kill(old)
                killed.set()
            name = f"w{number}-{seq}"
            try:
                client.create("identities", _identity(name))
            except (ApiError, httpx.HTTPError):  # outcome unknown, or that member is gone: try another one
                client.close()
                target, client = signed_in_elsewhere(target)
                if client is None:
                    return
                continue
            with lock:
                acknowledged.append(name)
        client.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    killed.wait(LOAD_SECONDS)
    kill_time = time.monotonic()
    new = cluster.leader(timeout=10, besides=old)
    assert new != old
    assert time.monotonic() - kill_time < 5.0
    for thread in threads:
        thread.join(LOAD_SECONDS + 30)
    assert len(acknowledged) > WRITERS * WRITES_PER_WRITER // 4

    cluster.restart(old)  # the same command on the same folder: it catches up (its store + the log)
    seen = _converged(cluster, range(3), set(acknowledged))
    for index, names in seen.items():
        missing = set(acknowledged) - names
        assert not missing, f"member {index} lost {len(missing)} acknowledged writes: {sorted(missing)[:5]}"


def test_without_a_quorum_writes_get_the_real_error_and_reads_go_on(ziti_cluster):
    cluster = ziti_cluster
    client = cluster.client(0)
    client.create("identities", _identity("before"))
    cluster.stop(1)
    cluster.stop(2)
    with pytest.raises(ApiError) as caught:
        client.create("identities", _identity("after"))
    assert (caught.value.status, caught.value.code) == (503, "CLUSTER_NO_LEADER")
    assert "before" in _names(client)  # the existing session reads on
    client.close()


def test_a_paused_member_rejoins_and_catches_up(ziti_cluster):
    cluster = ziti_cluster
    leader = cluster.leader()
    paused = next(i for i in range(3) if i != leader)
    cluster.pause(paused)
    try:
        with cluster.client(leader) as client:
            client.create("identities", _identity("while-paused"))
    finally:
        cluster.resume(paused)
    seen = _converged(cluster, [paused], {"while-paused"})
    assert "while-paused" in seen[paused]


def test_list_members_and_controllers_show_every_member(ziti_cluster):
    cluster = ziti_cluster
    deadline = time.monotonic() + 10  # the last member to join connects to every other one within a moment
    rows = cluster.list_members(1)
    while not all(row["connected"] for row in rows):
        assert time.monotonic() < deadline, rows
        time.sleep(0.1)
        rows = cluster.list_members(1)
    assert sorted(row["id"] for row in rows) == ["ctrl1", "ctrl2", "ctrl3"]
    assert sum(row["leader"] for row in rows) == 1
    assert all(row["connected"] and row["voter"] for row in rows)
    with cluster.client(2) as client:
        controllers = client.mgmt_ok("GET", "/controllers")
        version = client.raw.get("/edge/client/v1/version").json()["data"]
    urls = sorted(c["apiAddresses"]["edge-management"][0]["url"] for c in controllers)
    assert urls == sorted(f"{m.url}/edge/management/v1" for m in cluster.members)
    assert "HA_CONTROLLER" in version["capabilities"]


def test_an_oidc_token_from_one_member_is_accepted_by_every_member_and_a_revocation_too(ziti_cluster):
    from harness.client import ZitiClient

    cluster = ziti_cluster
    with ZitiClient.connect(cluster.members[0].url, ca=cluster.ca_file) as first:
        first.login_oidc("password", username="admin", password="admin")
        access = first.oidc.access_token
        with ZitiClient.connect(cluster.members[1].url, ca=cluster.ca_file) as second:
            bearer = {"Authorization": f"Bearer {access}"}
            answer = second.raw.get("/edge/management/v1/identities", headers=bearer)
            assert answer.status_code == 200, answer.text
            keys = second.raw.get("/oidc/keys").json()["keys"]
            assert len({key["kid"] for key in keys}) == 3
            with cluster.client(0) as admin:  # revoke the identity's tokens on member 1 ...
                me = admin.mgmt_ok("GET", "/identities", params={"filter": 'name = "Default Admin"'})[0]
                admin.mgmt_ok("POST", "/revocations", json={"id": me["id"], "type": "IDENTITY"})
            deadline = time.monotonic() + 10  # ... and member 2 refuses them once the entry is applied there
            while second.raw.get("/edge/management/v1/identities", headers=bearer).status_code == 200:
                assert time.monotonic() < deadline
                time.sleep(0.1)


def test_a_refresh_token_from_one_member_refreshes_at_another_and_only_once(ziti_cluster):
    """After a failover an SDK refreshes at whichever member it reaches: the issuer's refresh token works there."""
    from harness.client import ZitiClient
    from harness.client.oidc import OidcError, OidcLogin

    cluster = ziti_cluster
    for style in ("c", "go"):
        with ZitiClient.connect(cluster.members[0].url, ca=cluster.ca_file) as first:
            first.login_oidc("password", style=style, username="admin", password="admin")
            tokens = first.oidc
        with ZitiClient.connect(cluster.members[1].url, ca=cluster.ca_file) as second:
            renewed = OidcLogin(second.http, "password", style).refresh(tokens)
            answer = second.raw.get(
                "/edge/management/v1/identities", headers={"Authorization": f"Bearer {renewed.access_token}"}
            )
            assert answer.status_code == 200, answer.text
        if style == "go":
            continue  # a token exchange does not spend the refresh token it presents (the real one's neither)
        with ZitiClient.connect(cluster.members[2].url, ca=cluster.ca_file) as third:
            deadline = time.monotonic() + 10  # spent cluster-wide once member 3 applied the revocation
            with pytest.raises(OidcError):
                while time.monotonic() < deadline:
                    OidcLogin(third.http, "password", style).refresh(tokens)
                    time.sleep(0.1)


def test_leadership_changes_are_cluster_events_in_each_members_event_file(ziti_cluster):
    import json

    cluster = ziti_cluster
    old = cluster.leader()
    with cluster.client(old) as client:
        response = client.raw.post(
            "/fabric/v1/cluster/transfer-leadership", json={}, headers={"zt-session": client.session_token}
        )
    assert response.status_code == 200, response.text
    new = cluster.leader(besides=old)

    def kinds(index: int) -> list[str]:
        path = cluster.members[index].folder / "events.jsonl"
        lines = path.read_text().splitlines() if path.exists() else []
        return [e.get("eventType") for e in map(json.loads, lines) if e.get("namespace") == "cluster"]

    deadline = time.monotonic() + 10
    while not ("leadership.lost" in kinds(old) and "leadership.gained" in kinds(new)):
        assert time.monotonic() < deadline, (kinds(old), kinds(new))
        time.sleep(0.1)
    assert kinds(old)[0] == "leadership.gained"  # the first member led the new cluster


def _leaders(cluster) -> dict[int, set[str]]:
    """Per member, the ids its ``list-members`` calls leader."""
    return {m.index: {r["id"] for r in cluster.list_members(m.index) if r["leader"]} for m in cluster.members}


def _one_leader(cluster, timeout: float = 15.0) -> dict[int, set[str]]:
    deadline = time.monotonic() + timeout
    while True:
        try:
            seen = _leaders(cluster)
        except ApiError:
            seen = {}
        agreed = {frozenset(ids) for ids in seen.values()}
        if (len(seen) == len(cluster.members) and len(agreed) == 1 and len(next(iter(agreed))) == 1) or (
            time.monotonic() > deadline
        ):
            return seen
        time.sleep(0.2)


def test_a_cut_off_leader_is_replaced_refuses_writes_serves_reads_and_catches_up(ziti_cluster):
    cluster = ziti_cluster
    old = cluster.leader()
    others = [i for i in range(3) if i != old]
    cut = cluster.client(old, timeout=60)  # signed in before the cut: a member without a quorum makes no session
    cut.create("identities", _identity("before-cut"))
    cluster.cut_off(old)
    new = cluster.leader(timeout=15, besides=old, asking=others[0])
    with cluster.client(others[1]) as client:  # the other two accept writes
        client.create("identities", _identity("during-cut"))
    with pytest.raises(ApiError) as caught:
        cut.create("identities", _identity("on-the-cut-off-member"))
    assert (caught.value.status, caught.value.code) == (503, "CLUSTER_NO_LEADER")
    names = _names(cut)  # the existing session reads on, from the member's own store
    assert "before-cut" in names and "during-cut" not in names
    rows = cut.raw.get("/fabric/v1/cluster/list-members", headers={"zt-session": cut.session_token}).json()["data"]
    assert all(row["readOnly"] for row in rows) and not any(row["leader"] for row in rows)
    cluster.reconnect(old)
    seen = _converged(cluster, range(3), {"before-cut", "during-cut"})
    assert all({"before-cut", "during-cut"} <= names for names in seen.values())
    assert all("on-the-cut-off-member" not in names for names in seen.values())
    leaders = _one_leader(cluster)
    assert set(map(frozenset, leaders.values())) == {frozenset({cluster.members[new].instance_id})}
    cut.close()


def test_a_paused_leader_is_replaced_and_rejoins_as_a_follower(ziti_cluster):
    cluster = ziti_cluster
    old = cluster.leader()
    others = [i for i in range(3) if i != old]
    cluster.pause(old)
    try:
        new = cluster.leader(timeout=15, besides=old, asking=others[0])
        with cluster.client(others[1]) as client:
            client.create("identities", _identity("while-the-leader-slept"))
    finally:
        cluster.resume(old)
    seen = _converged(cluster, [old], {"while-the-leader-slept"})
    assert "while-the-leader-slept" in seen[old]
    leaders = _one_leader(cluster)
    assert set(map(frozenset, leaders.values())) == {frozenset({cluster.members[new].instance_id})}
