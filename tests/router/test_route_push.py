"""A dial across links: the controller pushes the route to the routers after the first while it answers the first
(the ``route`` push, protocol version 3), so the last router dials its host at once and tells the first over the link
(LinkDialed); a failure on the way ends the dial with its reason, and the controller's circuit goes."""

from __future__ import annotations

import asyncio
import threading

import pytest

from harness.dataplane import flows
from harness.dataplane.sync import DialError, SyncDataPlane, echo
from router.wire import ContentType as CT
from router.wire import Header, Message, u32
from tests.router.raw import RawChannel


def linked_pair(net, stem: str):
    """Routers a and b linked; a service whose binder uses a and dialer uses b (the dial crosses the link)."""
    net.start("a"), net.start("b")
    net.wait_links(1)
    service = net.service(stem, encrypted=False)
    binder = net.identity(f"{stem}-binder", service, "Bind", ["a"])
    dialer = net.identity(f"{stem}-dialer", service, "Dial", ["b"])
    return service, binder, dialer


def spy_answers(net, monkeypatch, short: str) -> list[dict]:
    """The controller's answers to router ``short``'s dial requests, as they go back."""
    answers, dial = [], net.links[short].dial

    def answered(*args):
        answer = dial(*args)
        answers.append(answer)
        return answer

    monkeypatch.setattr(net.links[short], "dial", answered)
    return answers


def raw_host(net, binder, service: str) -> RawChannel:
    """A host speaking frames by hand, bound on router a."""
    host = RawChannel(net.routers["a"].url, binder)
    host.hello()
    token = flows.dial(host.client, service, "Bind")["token"].encode()
    host.send(Message(CT.BIND, token, {Header.CONN_ID: u32(1), Header.SUPPORTS_BIND_SUCCESS: b"\x01"}))
    host.recv(), host.recv()  # StateConnected, BindSuccess
    return host


def dial_in_background(guest: SyncDataPlane, service: str) -> tuple[threading.Thread, dict]:
    """A dial on its own thread (join it); ``outcome["error"]``: what the dialer was told if it failed."""
    outcome: dict = {}

    def dial():
        try:
            guest.dial(service)
        except DialError as ex:
            outcome["error"] = str(ex)

    dialing = threading.Thread(target=dial)
    dialing.start()
    return dialing, outcome


def echo_across(binder, dialer, service: str, payload: bytes) -> bytes:
    """``payload`` through an echo the binder hosts, as the dialer reads it back."""
    with SyncDataPlane.from_identity_file(binder) as host, SyncDataPlane.from_identity_file(dialer) as guest:
        host.bind(service, echo)
        with guest.dial(service) as conn:
            conn.sendall(payload)
            return conn.recv_exactly(len(payload))


def test_the_last_router_gets_the_route_pushed_and_the_dial_takes_one_request(net, monkeypatch):
    service, binder, dialer = linked_pair(net, "pushed")
    pushed, egress = [], net.routers["a"].forwarder
    take = egress.route_pushed
    monkeypatch.setattr(egress, "route_pushed", lambda route: (pushed.append(route), take(route)))
    answers = spy_answers(net, monkeypatch, "b")
    assert echo_across(binder, dialer, service, b"across") == b"across"
    [answer] = answers  # one request to the controller for the whole dial
    link = net.link_between("a", "b")
    assert answer["pushed"] is True and answer["path"] == [net.id("b"), net.id("a")]
    assert [(p["circuitId"], p["path"], p["links"], p["identityName"]) for p in pushed] == [
        (answer["circuit_id"], [net.id("b"), net.id("a")], [link.id], net.name("pushed-dialer"))
    ]
    net.timeline.wait("circuit", "deleted", circuit_id=answer["circuit_id"])
    assert net.fabric.circuit(answer["circuit_id"]) is None


def test_the_next_routers_word_and_the_hosts_data_may_come_before_the_controllers_answer(net, monkeypatch):
    """The first router's answer from the controller is held back until router a's LinkDialed (and the greeting
    the host sends at once) reached router b: b keeps them for the circuit and the dialer reads the greeting first."""
    service, binder, dialer = linked_pair(net, "early")
    held, ingress = threading.Event(), net.routers["b"].forwarder
    hold = ingress.held.hold

    def holding(link, message):
        hold(link, message)
        if message.content_type == CT.LINK_PAYLOAD:
            held.set()

    monkeypatch.setattr(ingress.held, "hold", holding)
    dial = net.links["b"].dial

    def late(*args):
        answer = dial(*args)
        assert held.wait(20), "router b held nothing"
        return answer

    monkeypatch.setattr(net.links["b"], "dial", late)
    monkeypatch.setattr(net.links["b"], "dial_now", lambda *args: None)  # answered on a worker, so it can be late

    def greet(conn):
        conn.sendall(b"hello first")
        echo(conn)

    with SyncDataPlane.from_identity_file(binder) as host, SyncDataPlane.from_identity_file(dialer) as guest:
        host.bind(service, greet)
        with guest.dial(service) as conn:
            assert conn.recv_exactly(11) == b"hello first"
            conn.sendall(b"then this")
            assert conn.recv_exactly(9) == b"then this"
    assert ingress.held.entries == {}


@pytest.mark.parametrize("host_does", ["refuses", "vanishes"])
def test_a_host_that_refuses_or_vanishes_ends_the_dial_with_the_reason_and_the_circuit_goes(
    net, monkeypatch, host_does
):
    service, binder, dialer = linked_pair(net, host_does)
    answers = spy_answers(net, monkeypatch, "b")
    with raw_host(net, binder, service) as host, SyncDataPlane.from_identity_file(dialer) as guest:
        dialing, outcome = dial_in_background(guest, service)
        request = host.recv()
        assert request.content_type == CT.DIAL
        if host_does == "refuses":
            host.send(Message(CT.DIAL_FAILED, b"not today", {Header.REPLY_FOR: host.reply_for(request)}))
        else:
            host.close()  # its whole channel, without a word
        dialing.join(30)
    # the host's own reason; a host gone: its channel closed ("peer closed") or no answer came from it
    reasons = {"refuses": ["not today"], "vanishes": ["peer closed", "no answer from the host"]}[host_does]
    assert outcome["error"] in [f"dial failed: {reason}" for reason in reasons]
    [answer] = answers
    assert answer["pushed"] is True
    [deleted] = net.timeline.wait("circuit", "deleted", circuit_id=answer["circuit_id"])
    assert deleted["reason"] == outcome["error"]
    assert net.fabric.circuit(answer["circuit_id"]) is None


def test_a_host_that_closes_at_once_ends_the_dialers_connection(net):
    service, binder, dialer = linked_pair(net, "closes")
    with SyncDataPlane.from_identity_file(binder) as host, SyncDataPlane.from_identity_file(dialer) as guest:
        host.bind(service, lambda conn: None)  # accepted, then closed by the handler's return
        for _ in range(3):
            with guest.dial(service) as conn:
                assert conn.recv() == b""


def test_a_link_cut_while_the_host_is_dialed_ends_the_dial_with_the_reason(net, monkeypatch):
    service, binder, dialer = linked_pair(net, "cut")
    answers = spy_answers(net, monkeypatch, "b")
    ingress, waiting = net.routers["b"], threading.Event()
    release = ingress.edge.held  # called once router b made its end of the circuit and waits for router a's word
    monkeypatch.setattr(ingress.edge, "held", lambda link, circuit_id: (release(link, circuit_id), waiting.set()))
    with raw_host(net, binder, service) as host, SyncDataPlane.from_identity_file(dialer) as guest:
        dialing, outcome = dial_in_background(guest, service)
        assert host.recv().content_type == CT.DIAL  # never answered: the link goes meanwhile
        assert waiting.wait(20)
        for link in list(ingress.link_channels.values()):
            ingress.loop.call_soon_threadsafe(link.close)
        dialing.join(30)
    assert outcome["error"] == "dial failed: link down"
    [answer] = answers
    [deleted] = net.timeline.wait("circuit", "deleted", circuit_id=answer["circuit_id"])
    assert deleted["reason"] == "dial failed: link down"
    assert net.fabric.circuit(answer["circuit_id"]) is None


def test_a_router_of_the_path_the_controller_cannot_push_to_gets_the_route_over_the_link(net, monkeypatch):
    """As a cluster member that does not hold the last router's control channel: the first router sends the route
    on (LinkRoute), as before version 3."""
    service, binder, dialer = linked_pair(net, "fallback")
    egress_id, route_to = net.id("a"), net.fabric.route_to
    monkeypatch.setattr(
        net.fabric, "route_to", lambda router_id: None if router_id == egress_id else route_to(router_id)
    )
    pushed, egress = [], net.routers["a"].forwarder
    monkeypatch.setattr(egress, "route_pushed", pushed.append)
    answers = spy_answers(net, monkeypatch, "b")
    assert echo_across(binder, dialer, service, b"hop by hop") == b"hop by hop"
    assert [answer["pushed"] for answer in answers] == [False] and pushed == []


ROUTE = {
    "circuitId": "c1",
    "serviceId": "s",
    "terminatorId": "t",
    "path": ["elsewhere", "ROUTER"],
    "links": ["l1"],
    "identityId": "i",
    "identityName": "n",
    "headers": {},
}


@pytest.mark.parametrize(
    ("changes", "line"),
    [
        ({"serviceId": None}, "a malformed route"),
        ({"links": [{"not": "an id"}]}, "a malformed route"),
        ({"headers": {"1003": "not base64!"}}, "a malformed route"),
        ({"path": ["elsewhere", "also elsewhere"]}, "a route that does not cross this router"),
        ({}, "link l1 is down"),
    ],
    ids=["a field missing", "a link that is no id", "headers not base64", "not on the path", "no such link"],
)
def test_a_pushed_route_this_router_cannot_take_is_dropped_with_one_line(net, caplog, changes, line):
    router = net.start("a")
    route = {**ROUTE, "path": ["elsewhere", router.router_id], **changes}
    route = {key: value for key, value in route.items() if value is not None}
    caplog.set_level("INFO", logger="router")
    done = threading.Event()
    router.loop.call_soon_threadsafe(lambda: (router.forwarder.route_pushed(route), done.set()))
    assert done.wait(10)
    lines = [r.getMessage() for r in caplog.records if "route" in r.getMessage() or "c1" in r.getMessage()]
    assert len(lines) == 1 and line in lines[0], lines
    assert router.stats()["circuits"] == 0


def test_a_word_for_a_circuit_the_first_router_never_makes_closes_the_hosts_connection(net, monkeypatch):
    """Router a dialed the host and said so, but router b's answer from the controller never came (here: the dial
    fails there after the word was held): b closes the circuit back once it held the word long enough."""
    service, binder, dialer = linked_pair(net, "orphan")
    held, ingress = threading.Event(), net.routers["b"].forwarder
    monkeypatch.setattr(ingress.held, "seconds", 0.2)
    hold = ingress.held.hold

    def holding(link, message):
        hold(link, message)
        held.set()

    monkeypatch.setattr(ingress.held, "hold", holding)
    dial = net.links["b"].dial

    def lost(*args):
        dial(*args)
        assert held.wait(20), "router b held nothing"
        raise PermissionError("the answer was lost")

    monkeypatch.setattr(net.links["b"], "dial", lost)
    monkeypatch.setattr(net.links["b"], "dial_now", lambda *args: None)  # answered on a worker, so it can be late
    ended = threading.Event()

    def host_side(conn):
        if conn.recv() == b"":
            ended.set()

    with SyncDataPlane.from_identity_file(binder) as host, SyncDataPlane.from_identity_file(dialer) as guest:
        host.bind(service, host_side)
        with pytest.raises(DialError, match="the answer was lost"):
            guest.dial(service)
        assert ended.wait(20), "the host's connection stayed open"
    assert ingress.held.entries == {} and ingress.held.size == 0


def test_dials_waiting_for_their_host_hold_no_task_on_the_router_that_dialed_it(net):
    """The host's answer settles a dial by callbacks: while three dials wait for the host, the router that dialed it
    (on routes the controller pushed) holds no task for them (it used to keep one per dial; a task of its own may
    come and go meanwhile, so fewer than three more is the bound)."""
    service, binder, dialer = linked_pair(net, "notask")

    def tasks_on_a() -> int:
        async def count() -> int:
            return len(asyncio.all_tasks())

        return asyncio.run_coroutine_threadsafe(count(), net.routers["a"].loop).result(10)

    def answer(request: Message) -> None:
        accepted = {Header.REPLY_FOR: host.reply_for(request), Header.CONN_ID: request.headers[Header.CONN_ID]}
        host.send(Message(CT.DIAL_SUCCESS, b"", accepted))

    guests = [SyncDataPlane.from_identity_file(dialer) for _ in range(3)]
    with raw_host(net, binder, service) as host:
        try:
            for guest in guests:  # each guest's channel and sessions, made once
                dialing, outcome = dial_in_background(guest, service)
                answer(host.recv())
                dialing.join(30)
                assert "error" not in outcome
            before = tasks_on_a()
            waiting = [dial_in_background(guest, service) for guest in guests]
            requests = [host.recv() for _ in guests]
            assert [request.content_type for request in requests] == [CT.DIAL] * 3
            during = tasks_on_a()
            for request in requests:
                answer(request)
            for dialing, outcome in waiting:
                dialing.join(30)
                assert "error" not in outcome
        finally:
            for guest in guests:
                guest.close()
    assert during - before < 3
