"""``router.members.ControllerMembers``: which members a router holds channels to as the member lists come, and
which member each call goes to (member channels stood in by fakes; the processes are in
tests/flows/test_cluster_routers.py)."""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import Caller, Terminator
from router.control import ControlError
from router.members import ControllerMembers, load_endpoints

PEMS = {"cert_pem": "c", "key_pem": "k", "server_cert_pem": "s", "ca_pem": "a"}


class FakeChannel:
    """A member's channel: connected or not, answering or failing each request name."""

    def __init__(self, address: str):
        self.address, self.ctrl_id = address, ""
        self.connected = threading.Event()
        self.started = self.closed = False
        self.calls: list[tuple[str, dict]] = []
        self.notified: list[tuple[str, dict]] = []
        self.answers: dict[str, object] = {}
        self.router_id, self.name = "r1", "router one"

    # what ControllerMembers wires
    def watch(self, _revoked):
        pass

    def watch_trusted_cas(self, _changed):
        pass

    def watch_peers(self, _returned):
        pass

    def watch_routes(self, _routed):
        pass

    def watch_state(self, _report, _reconciled):
        pass

    def watch_edge_faults(self, _changed):
        pass

    def start(self):
        self.started = True
        self.connected.set()
        return self

    def connect(self, _timeout=10.0):
        return self.start()

    def close(self):
        self.closed = True
        self.connected.clear()

    def _call(self, name, **args):
        if not self.connected.is_set():
            raise ControlError("not connected to the controller")
        self.calls.append((name, args))
        answer = self.answers.get(name)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def _notify(self, name, **args):
        self.notified.append((name, args))


class Members(ControllerMembers):
    def __init__(self, addresses, **kwargs):
        self.made: dict[str, FakeChannel] = {}
        super().__init__(addresses, **PEMS, **kwargs)

    def _new_link(self, address):
        channel = self.made[address] = FakeChannel(address)
        return self._wire(channel)


def told(members: Members, sender: str, addresses: list[str], index: int, leader: bool, ids=None) -> None:
    controllers = [{"id": (ids or {}).get(a, a), "address": a} for a in addresses]
    members._members_told(members.links[sender], {"controllers": controllers, "index": index, "isLeader": leader})


def test_the_first_list_adds_members_and_a_newer_one_from_the_leader_removes_the_missing(tmp_path):
    members = Members(["tls:a:1"], data=tmp_path).connect()
    told(members, "tls:a:1", ["tls:a:1", "tls:b:2", "tls:c:3"], index=5, leader=False)
    assert sorted(members.links) == ["tls:a:1", "tls:b:2", "tls:c:3"]
    assert all(members.made[a].started for a in members.links)

    told(members, "tls:b:2", ["tls:a:1", "tls:b:2"], index=4, leader=True)  # older: not taken
    assert sorted(members.links) == ["tls:a:1", "tls:b:2", "tls:c:3"]
    told(members, "tls:b:2", ["tls:a:1", "tls:b:2"], index=9, leader=False)  # a follower's removal: ignored
    assert sorted(members.links) == ["tls:a:1", "tls:b:2", "tls:c:3"]
    told(members, "tls:b:2", ["tls:a:1", "tls:b:2"], index=12, leader=True)
    assert sorted(members.links) == ["tls:a:1", "tls:b:2"]
    for _ in range(500):  # its channel closes on a thread of its own (bounded wait)
        if members.made["tls:c:3"].closed:
            break
        time.sleep(0.01)
    assert members.made["tls:c:3"].closed
    assert load_endpoints(tmp_path) == ["tls:a:1", "tls:b:2"]
    assert (tmp_path / "endpoints.json").stat().st_mode & 0o077 == 0


def test_a_channel_to_a_listed_member_under_another_address_gives_way_to_the_listed_one():
    members = Members(["tls:localhost:1"]).connect()
    members.links["tls:localhost:1"].ctrl_id = "ctrl1"
    told(members, "tls:localhost:1", ["tls:127.0.0.1:1", "tls:b:2"], 3, False, ids={"tls:127.0.0.1:1": "ctrl1"})
    assert sorted(members.links) == ["tls:127.0.0.1:1", "tls:b:2"]


def test_requests_go_to_the_leader_and_past_a_member_that_is_away_circuit_down_to_the_dials_member():
    members = Members(["tls:a:1"]).connect()
    told(members, "tls:a:1", ["tls:a:1", "tls:b:2"], index=2, leader=False)
    a, b = members.made["tls:a:1"], members.made["tls:b:2"]
    told(members, "tls:b:2", ["tls:a:1", "tls:b:2"], index=2, leader=True)
    b.answers["dial"] = {"circuit_id": "c1"}
    members.dial(Caller("s", "i"), "t", "", False)
    assert [name for name, _ in b.calls] == ["dial"] and not a.calls

    b.connected.clear()  # the leader died
    a.answers["dial"] = {"circuit_id": "c2"}
    members.dial(Caller("s", "i"), "t", "", False)
    assert [name for name, _ in a.calls] == ["dial"]
    b.connected.set()
    members.circuit_down({"circuit_id": "c2", "reason": "done"})
    members.circuit_down({"circuit_id": "c1", "reason": "done"})
    assert [n for n, _ in a.notified if n == "circuitDown"] == ["circuitDown"]
    assert [n for n, _ in b.notified if n == "circuitDown"] == ["circuitDown"]

    a.connected.clear()
    b.connected.clear()
    with pytest.raises(PermissionError, match="unreachable"):
        members.dial(Caller("s", "i"), "t", "", False)


def test_a_terminator_write_a_member_failed_goes_to_the_next_and_presence_goes_to_every_member():
    members = Members(["tls:a:1"]).connect()
    told(members, "tls:a:1", ["tls:a:1", "tls:b:2"], index=2, leader=True)
    a, b = members.made["tls:a:1"], members.made["tls:b:2"]
    a.answers["addTerminator"] = RuntimeError("Cluster has no leader")
    members.add_terminator(Terminator("t1", "svc", "ident"))
    assert [n for n, _ in b.calls] == ["addTerminator"]
    members.connection_changed("ident", True)
    assert ("connectionChanged", {"identityId": "ident", "connected": True}) in a.notified
    assert ("connectionChanged", {"identityId": "ident", "connected": True}) in b.notified


addresses = st.sampled_from([f"tls:m:{port}" for port in range(1, 6)])
pushes = st.lists(
    st.tuples(st.lists(addresses, min_size=0, max_size=4, unique=True), st.integers(0, 20), st.booleans()), max_size=12
)


@settings(max_examples=150, deadline=None)
@given(pushes=pushes)
def test_the_channels_follow_the_newest_list_and_never_drop_to_none(pushes):
    members = Members(["tls:m:1"]).connect()
    best = 0
    for listed, index, leader in pushes:
        sender = next(iter(members.links))
        before = set(members.links)
        told(members, sender, listed, index, leader)
        after = set(members.links)
        assert after, "never without a channel"
        if not listed or (best and index <= best):
            assert after == before
            continue
        best = index
        assert set(listed) <= after
        if leader:
            assert after == set(listed)
        else:
            assert before <= after
