"""The channel as SDKs speak it: hello, latency, session checks, and the real close texts."""

from __future__ import annotations

import threading

import pytest

from harness.client import ZitiClient
from harness.dataplane import flows
from harness.dataplane.sync import DialError, echo
from harness.processes.quickstart import new_quickstart
from router.wire import ContentType as CT
from router.wire import Flag, Header, Message, u32
from tests.router.raw import RawChannel


def test_hello_result_answers_the_hello_sequence_with_the_router_headers(ziti_quickstart):
    with RawChannel(ziti_quickstart.router_url, ziti_quickstart.dialer) as channel:
        reply = channel.hello()
    assert (reply.content_type, reply.reply_for, reply.bool_header(Header.RESULT_SUCCESS)) == (CT.RESULT, 1, True)
    assert reply.str_header(Header.HELLO_VERSION).count("|") == 4
    assert reply.bool_header(Header.SUPPORTS_BIND_SUCCESS) and reply.str_header(Header.ROUTER_ID)
    assert 9 not in reply.headers  # never IsGrouped: Go would switch to multi-underlay


def test_go_hello_with_sequence_minus_one_is_answered_for_minus_one(ziti_quickstart):
    with RawChannel(ziti_quickstart.router_url, ziti_quickstart.dialer) as channel:
        channel.send(Message(CT.HELLO, b"go", {Header.SESSION_TOKEN: channel.token.encode()}, seq=-1))
        assert channel.recv().reply_for == -1


def test_latency_probe_is_answered_with_its_timestamp_copied(ziti_quickstart):
    with RawChannel(ziti_quickstart.router_url, ziti_quickstart.dialer) as channel:
        channel.hello()
        probe = channel.send(Message(CT.LATENCY, b"", {Header.REFLECTED: (123456789).to_bytes(8, "little")}))
        reply = channel.recv()
    assert (reply.content_type, reply.reply_for) == (CT.RESULT, probe.seq)
    assert reply.headers[Header.REFLECTED] == (123456789).to_bytes(8, "little")


@pytest.mark.parametrize("token", ["not-a-token", ""])
def test_hello_with_an_unknown_api_session_is_refused_and_closed(ziti_quickstart, token):
    with RawChannel(ziti_quickstart.router_url, ziti_quickstart.dialer) as channel:
        channel.send(Message(CT.HELLO, b"x", {Header.SESSION_TOKEN: token.encode()}))
        reply = channel.recv()
        assert (reply.content_type, reply.bool_header(Header.RESULT_SUCCESS)) == (CT.RESULT, False)
        assert channel.recv() is None


def test_a_certificate_that_is_not_the_api_sessions_is_refused(ziti_quickstart):
    with (
        RawChannel(ziti_quickstart.router_url, ziti_quickstart.binder) as binder,
        RawChannel(ziti_quickstart.router_url, ziti_quickstart.dialer) as dialer,
    ):
        reply = dialer.hello(token=binder.token)
    assert reply.bool_header(Header.RESULT_SUCCESS) is False
    assert b"certificate" in reply.body


def _session(channel: RawChannel, service: str, kind: str) -> dict:
    return flows.dial(channel.client, service, kind)


def test_connect_with_an_unknown_session_closes_with_invalid_session(ziti_quickstart):
    with RawChannel(ziti_quickstart.router_url, ziti_quickstart.dialer) as channel:
        channel.hello()
        connect = channel.send(Message(CT.CONNECT, b"no-such-session", {Header.CONN_ID: u32(7)}))
        reply = channel.recv()
    assert (reply.content_type, reply.reply_for, reply.conn_id, reply.body) == (
        CT.STATE_CLOSED,
        connect.seq,
        7,
        b"Invalid Session",
    )


def test_a_dial_session_cannot_bind(ziti_quickstart):
    with RawChannel(ziti_quickstart.router_url, ziti_quickstart.dialer) as channel:
        channel.hello()
        token = _session(channel, ziti_quickstart.service, "Dial")["token"].encode()
        channel.send(Message(CT.BIND, token, {Header.CONN_ID: u32(3), Header.PUBLIC_KEY: bytes(32)}))
        reply = channel.recv()
    assert (reply.content_type, reply.body) == (CT.STATE_CLOSED, b"rejecting bind, invalid session type")


def test_dialing_a_service_nobody_binds_closes_with_no_terminators(ziti_quickstart):
    with ziti_quickstart.dataplane(ziti_quickstart.dialer) as guest:
        with pytest.raises(DialError, match=r"service \S+ has no terminators"):
            guest.dial(ziti_quickstart.service)


def test_an_encrypted_service_refuses_a_dialer_without_a_public_key(ziti_quickstart):
    with (
        ziti_quickstart.dataplane(ziti_quickstart.binder) as host,
        RawChannel(ziti_quickstart.router_url, ziti_quickstart.dialer) as channel,
    ):
        host.bind(ziti_quickstart.service, echo)
        channel.hello()
        token = _session(channel, ziti_quickstart.service, "Dial")["token"].encode()
        channel.send(Message(CT.CONNECT, token, {Header.CONN_ID: u32(1)}))
        reply = channel.recv()
    assert reply.body == b"encryption required on service, initiator did not send public header"


def test_the_host_sees_the_dialers_key_and_the_dialer_the_hosts(ziti_quickstart):
    """The router relays public keys (and would relay any bytes): it never holds a session key."""
    with (
        RawChannel(ziti_quickstart.router_url, ziti_quickstart.binder) as host,
        RawChannel(ziti_quickstart.router_url, ziti_quickstart.dialer) as dialer,
    ):
        host.hello(), dialer.hello()
        bind_token = _session(host, ziti_quickstart.service, "Bind")["token"].encode()
        host.send(
            Message(
                CT.BIND,
                bind_token,
                {Header.CONN_ID: u32(1), Header.PUBLIC_KEY: b"H" * 32, Header.SUPPORTS_BIND_SUCCESS: b"\x01"},
            )
        )
        assert host.recv().content_type == CT.STATE_CONNECTED
        assert host.recv().content_type == CT.BIND_SUCCESS
        dial_token = _session(dialer, ziti_quickstart.service, "Dial")["token"].encode()
        connect = dialer.send(Message(CT.CONNECT, dial_token, {Header.CONN_ID: u32(5), Header.PUBLIC_KEY: b"D" * 32}))
        dial = host.recv()
        assert (dial.content_type, dial.conn_id, dial.body, dial.headers[Header.PUBLIC_KEY]) == (
            CT.DIAL,
            1,
            bind_token,
            b"D" * 32,
        )
        new_id = dial.int_header(Header.ROUTER_PROVIDED_CONN_ID)
        assert new_id >= 2**31 and Header.CRYPTO_METHOD not in dial.headers
        host.send(
            Message(
                CT.DIAL_SUCCESS, u32(new_id), {Header.CONN_ID: u32(1), Header.REPLY_FOR: dial.seq.to_bytes(4, "little")}
            )
        )
        host.send(Message(CT.DATA, b"opaque", {Header.CONN_ID: u32(new_id)}))
        connected = dialer.recv()
        assert (connected.content_type, connected.reply_for, connected.headers[Header.PUBLIC_KEY]) == (
            CT.STATE_CONNECTED,
            connect.seq,
            b"H" * 32,
        )
        data = dialer.recv()
        assert (data.content_type, data.conn_id, data.body) == (CT.DATA, 5, b"opaque")
        dialer.send(Message(CT.STATE_CLOSED, b"bye", {Header.CONN_ID: u32(5)}))
        closed = host.recv()
        assert (closed.content_type, closed.conn_id) == (CT.STATE_CLOSED, new_id)


def test_a_deleted_session_is_refused_as_invalid_and_the_client_refreshes_it(ziti_quickstart, timeline):
    with (
        ziti_quickstart.dataplane(ziti_quickstart.binder) as host,
        ziti_quickstart.dataplane(ziti_quickstart.dialer) as guest,
    ):
        host.bind(ziti_quickstart.service, echo)
        guest.dial(ziti_quickstart.service).close()
        [session] = timeline.wait("edge.sessions", "created", session_type="Dial")
        ziti_quickstart.admin.management.call("deleteSession", session["id"])
        with guest.dial(ziti_quickstart.service) as conn:
            conn.sendall(b"again")
            assert conn.recv_exactly(5) == b"again"
    assert [e["reason"] for e in timeline.matching("circuit", "failed")] == ["Invalid Session"]


def test_unbind_removes_the_terminator_and_keeps_the_channel(ziti_quickstart, timeline):
    with RawChannel(ziti_quickstart.router_url, ziti_quickstart.binder) as host:
        host.hello()
        token = _session(host, ziti_quickstart.service, "Bind")["token"].encode()
        host.send(
            Message(
                CT.BIND,
                token,
                {Header.CONN_ID: u32(2), Header.PUBLIC_KEY: bytes(32), Header.SUPPORTS_BIND_SUCCESS: b"\x01"},
            )
        )
        host.recv(), host.recv()  # StateConnected, BindSuccess
        [created] = timeline.wait("terminator", "created")
        host.send(Message(CT.UPDATE_BIND, token, {Header.CONN_ID: u32(2), Header.COST: (5).to_bytes(2, "little")}))
        host.send(Message(CT.UNBIND, token, {Header.CONN_ID: u32(2)}))
        timeline.wait("terminator", "deleted", terminator_id=created["terminator_id"])
        probe = host.send(Message(CT.LATENCY))
        assert host.recv().reply_for == probe.seq  # no reply to Unbind, and the channel lives on
    query = f'service.name="{ziti_quickstart.service}"'
    assert ziti_quickstart.admin.management.call("listTerminators", filter=query) == []


def test_multipart_messages_and_fin_from_a_go_style_host_reach_the_dialer(
    ziti_quickstart_controller, tmp_path, ziti_unique
):
    local = ziti_quickstart_controller
    with ZitiClient.connect(local.url) as admin:
        admin.login("admin", "admin")
        plain = new_quickstart(
            admin,
            tmp_path,
            ziti_unique("plain"),
            controller_url=local.https_url,
            router_url=local.router.url,
            encrypted=False,
        )
        with RawChannel(plain.router_url, plain.binder) as host, plain.dataplane(plain.dialer) as guest:
            host.hello()
            token = _session(host, plain.service, "Bind")["token"].encode()
            host.send(Message(CT.BIND, token, {Header.CONN_ID: u32(1), Header.SUPPORTS_BIND_SUCCESS: b"\x01"}))
            host.recv(), host.recv()
            conn_holder = {}
            dialer = threading.Thread(target=lambda: conn_holder.update(conn=guest.dial(plain.service)))
            dialer.start()
            dial = host.recv()
            new_id = dial.int_header(Header.ROUTER_PROVIDED_CONN_ID)
            host.send(
                Message(
                    CT.DIAL_SUCCESS,
                    u32(new_id),
                    {Header.CONN_ID: u32(1), Header.REPLY_FOR: dial.seq.to_bytes(4, "little")},
                )
            )
            dialer.join(20)
            packed = b"".join(len(p).to_bytes(2, "little") + p for p in (b"hel", b"lo"))
            host.send(Message(CT.DATA, packed, {Header.CONN_ID: u32(new_id), Header.FLAGS: u32(Flag.MULTIPART_MSG)}))
            host.send(Message(CT.DATA, b"", {Header.CONN_ID: u32(new_id), Header.FLAGS: u32(Flag.FIN)}))
            conn = conn_holder["conn"]
            assert conn.recv_exactly(5) == b"hello"
            assert conn.recv() == b""


def test_update_token_accepts_a_new_api_session_of_the_same_identity_only(ziti_quickstart):
    with (
        RawChannel(ziti_quickstart.router_url, ziti_quickstart.dialer) as channel,
        RawChannel(ziti_quickstart.router_url, ziti_quickstart.binder) as other,
    ):
        channel.hello()
        fresh = ZitiClient.from_identity_file(ziti_quickstart.dialer)
        fresh.login_cert()
        update = channel.send(Message(CT.UPDATE_TOKEN, fresh.token.encode()))
        reply = channel.recv()
        assert (reply.content_type, reply.reply_for) == (CT.UPDATE_TOKEN_SUCCESS, update.seq)
        channel.send(Message(CT.UPDATE_TOKEN, other.token.encode()))
        assert channel.recv().content_type == CT.UPDATE_TOKEN_FAILURE
        fresh.close()
