"""Edge messages: Bind/Unbind make terminators, Connect dials a host, Data is relayed.

All state lives in the router's event loop (one thread), so no locks: a
:class:`Binding` per hosted service and bind conn, a :class:`Circuit` per dial
with its two ends. Host data that arrives before the dialer's StateConnected
is queued, so the dialer never sees bytes before the connection exists.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field

from router.channel import Channel, ChannelClosed
from router.link import Caller, Grant, Terminator
from router.wire import ContentType as CT
from router.wire import Header, Message, boolean, i32, u32

log = logging.getLogger("router")
INVALID_SESSION = "Invalid Session"
PRECEDENCES = {0: "default", 1: "required", 2: "failed"}
PRECEDENCE_ORDER = {"required": 0, "default": 1, "failed": 2}
#: headers the router copies from Connect into Dial (never CryptoMethod: Go and C encode it differently)
DIAL_COPIES = (Header.PUBLIC_KEY, Header.CONNECTION_MARKER, Header.APP_DATA)
#: content types SDKs may send that this router does not act on (anything else closes the channel)
IGNORED = frozenset(
    {
        CT.PING,
        CT.RESULT,
        CT.UPDATE_BIND,
        CT.HEALTH_EVENT,
        CT.CONN_INSPECT_RESPONSE,
        CT.DIAL_SUCCESS,
        CT.DIAL_FAILED,
        CT.TRACE_ROUTE,
        CT.TRACE_ROUTE_RESPONSE,
        CT.STATE_SESSION_ENDED,
        CT.PROBE,
        CT.INSPECT_RESPONSE,
        CT.POSTURE_RESPONSE,
        CT.HEARTBEAT,
    }
)


@dataclass(eq=False)
class Binding:
    channel: Channel
    conn_id: int
    token: bytes
    grant: Grant
    terminator: Terminator


@dataclass(eq=False)
class Circuit:
    id: str
    service_id: str
    dialer: tuple[Channel, int]
    host: tuple[Channel, int]
    open: bool = False
    queued: list[tuple[Channel, Message]] = field(default_factory=list)
    moved: dict[str, int] = field(default_factory=lambda: {"dialer": 0, "host": 0})

    def other(self, channel: Channel, conn_id: int) -> tuple[Channel, int]:
        return self.host if (channel, conn_id) == self.dialer else self.dialer


def closed(conn_id: int, reason: str, request: Message | None = None) -> Message:
    out = Message(CT.STATE_CLOSED, reason.encode(), {Header.CONN_ID: u32(conn_id)})
    if request is not None:
        out.headers[Header.REPLY_FOR] = i32(request.seq)
    return out


class Edge:
    """The router's bindings and circuits."""

    def __init__(self, router):
        self.router = router
        self.link = router.link
        self.bindings: dict[str, Binding] = {}
        self.circuits: dict[str, Circuit] = {}

    # -- dispatch ----------------------------------------------------------------
    async def handle(self, channel: Channel, message: Message) -> None:
        ct = message.content_type
        if ct == CT.DATA:
            await self._data(channel, message)
        elif ct == CT.CONNECT:
            self._spawn(self._connect(channel, message))
        elif ct == CT.BIND:
            self._spawn(self._bind(channel, message))
        elif ct == CT.STATE_CLOSED:
            await self._closed(channel, message)
        elif ct == CT.UNBIND:
            await self._unbind(channel, message)
        elif ct == CT.UPDATE_TOKEN:
            self._spawn(self._update_token(channel, message))
        elif ct in IGNORED:
            pass  # late replies and optional features: accepted, not acted on
        else:
            log.warning("router: %s sent unknown content type %d, closing", channel.id, ct)
            channel.close()

    async def _update_token(self, channel: Channel, message: Message) -> None:
        """An SDK's refreshed API session token (OIDC): accepted if it names the same identity."""
        token = message.body.decode("utf-8", "replace")
        try:
            caller = Caller(**await asyncio.to_thread(self.link.hello, token, channel.fingerprint()))
            if caller.identity_id != channel.caller.identity_id:
                raise PermissionError("the new token belongs to another identity")
        except PermissionError as ex:
            return await channel.send(channel.reply(message, CT.UPDATE_TOKEN_FAILURE, str(ex).encode()))
        channel.caller = caller
        await channel.send(channel.reply(message, CT.UPDATE_TOKEN_SUCCESS))

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.router.tasks.add(task)
        task.add_done_callback(self.router.tasks.discard)

    async def _grant(self, channel: Channel, message: Message, kind: str) -> Grant | None:
        conn_id = message.conn_id
        if conn_id is None:
            await channel.send(closed(0, "connId not set, required", message))
            return None
        try:
            token = message.body.decode("utf-8", "replace")
            return Grant(**await asyncio.to_thread(self.link.session, channel.caller, token, kind))
        except PermissionError as ex:
            reason = str(ex) or INVALID_SESSION
            await channel.send(closed(conn_id, reason, message))
            self.link.emit(
                "circuit" if kind == "Dial" else "terminator",
                "failed",
                identity_id=channel.caller.identity_id,
                router_id=self.router.router_id,
                reason=reason,
            )
            return None

    # -- bind ------------------------------------------------------------------------
    async def _bind(self, channel: Channel, message: Message) -> None:
        grant = await self._grant(channel, message, "Bind")
        if grant is None or channel.closed:
            return
        key = message.headers.get(Header.PUBLIC_KEY)
        if grant.encryption_required and not key:
            await channel.send(
                closed(message.conn_id, "encryption required on service, host did not send public header", message)
            )
            return
        cost = message.int_header(Header.COST) or 0
        terminator = Terminator(
            str(uuid.uuid4()),
            grant.service_id,
            channel.caller.identity_id,
            min(cost, 65535),
            PRECEDENCES.get(message.int_header(Header.PRECEDENCE) or 0, "default"),
            message.str_header(Header.TERMINATOR_IDENTITY) or "",
            key,
        )
        previous = channel.conns.get(message.conn_id)
        if isinstance(previous, Binding):  # a re-bind on the same conn id replaces the old terminator
            await self._drop_binding(previous)
        binding = Binding(channel, message.conn_id, message.body, grant, terminator)
        self.bindings[terminator.terminator_id] = binding
        channel.conns[message.conn_id] = binding
        out = channel.reply(message, CT.STATE_CONNECTED, conn_id=u32(message.conn_id))
        if message.bool_header(Header.ROUTER_PROVIDED_CONN_ID):
            out.headers[Header.ROUTER_PROVIDED_CONN_ID] = boolean(True)
        await channel.send(out)
        try:
            await asyncio.to_thread(self.link.add_terminator, terminator)
        except Exception as ex:  # noqa: BLE001 - e.g. the service went meanwhile: that bind ends, nothing else
            log.warning("router: %s could not create a terminator for %s: %s", channel.id, grant.service_id, ex)
            self.bindings.pop(terminator.terminator_id, None)
            channel.conns.pop(message.conn_id, None)
            return await channel.send(closed(message.conn_id, f"failed to create terminator: {ex}"))
        self.link.emit(
            "terminator",
            "created",
            terminator_id=terminator.terminator_id,
            service_id=grant.service_id,
            identity_id=terminator.identity_id,
            router_id=self.router.router_id,
        )
        if binding.terminator.terminator_id not in self.bindings:  # unbound while the controller was writing
            await asyncio.to_thread(self.link.remove_terminator, terminator.terminator_id)
        elif message.bool_header(Header.SUPPORTS_BIND_SUCCESS):
            await channel.send(Message(CT.BIND_SUCCESS, b"", {Header.CONN_ID: u32(binding.conn_id)}))

    async def _unbind(self, channel: Channel, message: Message) -> None:
        binding = channel.conns.get(message.conn_id)
        if isinstance(binding, Binding):
            await self._drop_binding(binding)

    async def _drop_binding(self, binding: Binding) -> None:
        binding.channel.conns.pop(binding.conn_id, None)
        if self.bindings.pop(binding.terminator.terminator_id, None) is None:
            return
        await asyncio.to_thread(self.link.remove_terminator, binding.terminator.terminator_id)
        self.link.emit(
            "terminator",
            "deleted",
            terminator_id=binding.terminator.terminator_id,
            service_id=binding.grant.service_id,
            identity_id=binding.terminator.identity_id,
            router_id=self.router.router_id,
        )

    # -- connect ----------------------------------------------------------------------
    def pick(self, service_id: str, instance: str | None) -> Binding | None:
        found = [
            b
            for b in self.bindings.values()
            if b.grant.service_id == service_id
            and not b.channel.closed
            and (not instance or b.terminator.instance_id == instance)
        ]
        found.sort(key=lambda b: (PRECEDENCE_ORDER[b.terminator.precedence], b.terminator.cost))
        return found[0] if found else None

    async def _connect(self, channel: Channel, message: Message) -> None:
        grant = await self._grant(channel, message, "Dial")
        if grant is None or channel.closed:
            return
        conn_id, dialer_key = message.conn_id, message.headers.get(Header.PUBLIC_KEY)
        if grant.encryption_required and not dialer_key:
            return await self._refuse(
                channel, message, grant, "encryption required on service, initiator did not send public header"
            )
        instance = message.str_header(Header.TERMINATOR_IDENTITY)
        binding = self.pick(grant.service_id, instance)
        if binding is None:
            suffix = f" for instanceId {instance}" if instance else ""
            return await self._refuse(channel, message, grant, f"service {grant.service_id} has no terminators{suffix}")
        host = binding.channel
        circuit = Circuit(str(uuid.uuid4()), grant.service_id, (channel, conn_id), (host, host.next_conn_id()))
        channel.conns[conn_id] = host.conns[circuit.host[1]] = circuit
        self.circuits[circuit.id] = circuit
        reply = await self._dial_host(circuit, binding, message)
        if reply is None or reply.content_type != CT.DIAL_SUCCESS:
            reason = "dial failed: " + (reply.body.decode("utf-8", "replace") if reply else "no answer from the host")
            self._forget(circuit)
            return await self._refuse(channel, message, grant, reason)
        if channel.closed:  # the dialer left while the host was accepting
            self._forget(circuit)
            return await host.send(closed(circuit.host[1], "peer closed"))
        out = channel.reply(message, CT.STATE_CONNECTED, conn_id=u32(conn_id), circuit_id=circuit.id.encode())
        if binding.terminator.host_public_key:
            out.headers[Header.PUBLIC_KEY] = binding.terminator.host_public_key
        # StateConnected goes out before any queued host data, and nothing awaits in between
        channel.send_nowait(out)
        circuit.open = True
        for source, queued in circuit.queued:
            self._forward_nowait(circuit, source, queued)
        circuit.queued.clear()
        await channel.drain()
        self.link.emit(
            "circuit",
            "created",
            circuit_id=circuit.id,
            service_id=grant.service_id,
            identity_id=channel.caller.identity_id,
            host_id=binding.terminator.identity_id,
            terminator_id=binding.terminator.terminator_id,
            router_id=self.router.router_id,
        )

    async def _dial_host(self, circuit: Circuit, binding: Binding, connect: Message) -> Message | None:
        caller = connect.headers.get(Header.CALLER_ID, b"")
        dial = Message(
            CT.DIAL,
            binding.token,
            {
                Header.CONN_ID: u32(binding.conn_id),
                Header.ROUTER_PROVIDED_CONN_ID: u32(circuit.host[1]),
                Header.CIRCUIT_ID: circuit.id.encode(),
                Header.CALLER_ID: caller,
                Header.DIALER_IDENTITY_ID: circuit.dialer[0].caller.identity_id.encode(),
                Header.DIALER_IDENTITY_NAME: circuit.dialer[0].caller.identity_name.encode(),
            },
        )
        for key in DIAL_COPIES:
            if key in connect.headers:
                dial.headers[key] = connect.headers[key]
        try:
            return await binding.channel.request(
                dial, self.router.dial_timeout, on_reply=lambda reply: self._host_conn_id(circuit, reply)
            )
        except (asyncio.TimeoutError, ChannelClosed):
            return None

    def _host_conn_id(self, circuit: Circuit, reply: Message) -> None:
        """Older SDKs ignore the router-provided id and name their own in DialSuccess: use theirs."""
        host, provided = circuit.host
        if reply.content_type != CT.DIAL_SUCCESS or len(reply.body) != 4:
            return
        chosen = int.from_bytes(reply.body, "little")
        if chosen != provided:
            if host.conns.get(provided) is circuit:
                del host.conns[provided]
            circuit.host = (host, chosen)
            host.conns[chosen] = circuit
            host.send_nowait(host.reply(reply, CT.STATE_CONNECTED, conn_id=u32(chosen)))

    async def _refuse(self, channel: Channel, message: Message, grant: Grant, reason: str) -> None:
        await channel.send(closed(message.conn_id, reason, message))
        self.link.emit(
            "circuit",
            "failed",
            service_id=grant.service_id,
            identity_id=channel.caller.identity_id,
            router_id=self.router.router_id,
            reason=reason,
        )

    # -- data and closes -------------------------------------------------------------------
    async def _data(self, channel: Channel, message: Message) -> None:
        circuit = channel.conns.get(message.conn_id)
        if not isinstance(circuit, Circuit):
            if message.conn_id is not None and circuit is None:
                await channel.send(closed(message.conn_id, "unknown connection"))
            return
        if not circuit.open:
            circuit.queued.append((channel, message))
            return
        await self._forward(circuit, channel, message)

    def _forward_nowait(self, circuit: Circuit, channel: Channel, message: Message) -> Channel:
        peer, peer_conn = circuit.other(channel, message.conn_id)
        circuit.moved["host" if (channel, message.conn_id) == circuit.host else "dialer"] += len(message.body)
        headers = {
            key: value for key, value in message.headers.items() if key in (Header.FLAGS, Header.UUID, Header.SEQ)
        }
        headers[Header.CONN_ID] = u32(peer_conn)
        peer.send_nowait(Message(CT.DATA, message.body, headers))
        return peer

    async def _forward(self, circuit: Circuit, channel: Channel, message: Message) -> None:
        await self._forward_nowait(circuit, channel, message).drain()

    async def _closed(self, channel: Channel, message: Message) -> None:
        entry = channel.conns.get(message.conn_id)
        if isinstance(entry, Binding):
            await self._drop_binding(entry)
        elif isinstance(entry, Circuit):
            peer, peer_conn = entry.other(channel, message.conn_id)
            self._forget(entry, "closed")
            await peer.send(closed(peer_conn, message.body.decode("utf-8", "replace")))

    def _forget(self, circuit: Circuit, event: str | None = None) -> None:
        for channel, conn_id in (circuit.dialer, circuit.host):
            if channel.conns.get(conn_id) is circuit:
                del channel.conns[conn_id]
        if self.circuits.pop(circuit.id, None) is not None and event and circuit.open:
            self.link.emit(
                "circuit",
                "deleted",
                circuit_id=circuit.id,
                service_id=circuit.service_id,
                router_id=self.router.router_id,
                bytes_from_dialer=circuit.moved["dialer"],
                bytes_from_host=circuit.moved["host"],
            )

    def revoke(self, kind: str, revoked_id: str) -> None:
        """A session went: its bindings end. An API session went: its channels close."""
        if kind == "apiSession":
            for channel in list(self.router.channels):
                if channel.caller and channel.caller.api_session_id == revoked_id:
                    log.info("router: %s closed, its api session was removed", channel.id)
                    channel.close()
            return
        for binding in [b for b in self.bindings.values() if b.grant.session_id == revoked_id]:
            binding.channel.send_nowait(closed(binding.conn_id, "session removed"))
            self._spawn(self._drop_binding(binding))

    async def channel_closed(self, channel: Channel) -> None:
        """The SDK went away: close its circuits' other ends, drop its bindings."""
        for conn_id, entry in list(channel.conns.items()):
            if isinstance(entry, Circuit):
                peer, peer_conn = entry.other(channel, conn_id)
                self._forget(entry, "closed")
                await peer.send(closed(peer_conn, "peer closed"))
            elif isinstance(entry, Binding):
                await self._drop_binding(entry)
        channel.conns.clear()
        self.router.channel_gone(channel)
