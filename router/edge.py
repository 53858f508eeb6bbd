"""Edge messages: Bind/Unbind make terminators, Connect dials a host (here or across links), Data is relayed.

:class:`Edge` serves SDK channels. Its :attr:`Edge.handlers` table maps each content type an SDK may send
to one method; anything else closes the channel with one log line. All state lives in the router's event
loop (one thread), so no locks: a :class:`Binding` per hosted service and bind conn, circuits in
:class:`~router.circuits.Circuits`.

A Connect asks the controller for a route (``ControllerLink.dial``): the terminator it picked by the
service's strategy, and the path of routers and links to it. A terminator here is dialed directly; one on
another router is reached over the path's first link: the controller pushed the route to the routers after
this one, and the next tells this one with a LinkDialed once its host accepted (``router/forwarder.py``); or,
when the controller could not push it, by a LinkRoute (``router/peer_links.py``). The circuit's data crosses
that link. Host data that arrives before the dialer's StateConnected is queued, so the dialer never sees bytes
before the connection exists.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import logging
import uuid
from dataclasses import dataclass
from typing import Callable

from protocol import encode_headers
from router.channel import VERSION, Channel, outcome, when_done
from router.circuits import Circuit, Circuits, EdgeEnd, LinkEnd, link_close_frame
from router.controller_link import Caller, ControllerLink, Grant, Terminator
from router.wire import ContentType as CT
from router.wire import Header, Message, boolean, i32, u32

log = logging.getLogger("router")
INVALID_SESSION = "Invalid Session"
PRECEDENCES = {0: "default", 1: "required", 2: "failed"}
#: headers the router copies from Connect into Dial (never CryptoMethod: Go and C encode it differently)
DIAL_COPIES = (Header.PUBLIC_KEY, Header.CONNECTION_MARKER, Header.APP_DATA, Header.CALLER_ID)
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


class DialFailed(Exception):
    """A dial did not reach its host; ``str()`` is what the dialer is told."""


async def ask(what: str, call, *args, now=None):
    """``call(*args)`` (a request to the controller): awaited when it is a coroutine function (a controller link living
    in the router's loop), else on a worker thread; first ``now(*args)`` if given, the same request answered here
    unless it would wait (None then). A refusal (``PermissionError``) or no route (``LookupError``) passes; any other
    failure of the request becomes a refusal the SDK is told, logged in one line, so an SDK is answered instead of
    waiting for its own timeout."""
    try:
        if now is not None and (answer := now(*args)) is not None:
            return answer
        if inspect.iscoroutinefunction(call):
            return await call(*args)
        return await asyncio.to_thread(call, *args)
    except (PermissionError, LookupError) as ex:
        if not isinstance(ex, KeyError):
            raise
        failure = ex
    except Exception as ex:  # noqa: BLE001 - whatever failed, the SDK gets an answer
        failure = ex
    reason = f"the controller failed {what}: {str(failure).strip(chr(39)) or type(failure).__name__}"
    log.warning("router: %s", reason)
    raise PermissionError(reason) from None


def closed(conn_id: int, reason: str, request: Message | None = None) -> Message:
    out = Message(CT.STATE_CLOSED, reason.encode(), {Header.CONN_ID: u32(conn_id)})
    if request is not None:
        out.headers[Header.REPLY_FOR] = i32(request.seq)
    return out


class Edge:
    """The router's SDK side: hellos, bindings and dials."""

    def __init__(
        self,
        link: ControllerLink,
        circuits: Circuits,
        links: dict[str, Channel],
        *,
        router_id: str,
        spawn,
        dial_timeout: float = 5.0,
    ):
        self.link, self.circuits, self.links = link, circuits, links
        self.router_id, self.spawn, self.dial_timeout = router_id, spawn, dial_timeout
        self.bindings: dict[str, Binding] = {}
        self.channels: set[Channel] = set()
        #: ``held(link, circuit_id)``: hand on the link messages for that circuit that came before it existed (a
        #: pushed route's LinkDialed, ``router/forwarder.py``); set by the router when it has links
        self.held = lambda link, circuit_id: None
        self.handlers = {
            CT.DATA: self.data,
            CT.CONNECT: lambda channel, message: self.spawn(self.connect(channel, message), now=True),
            CT.BIND: lambda channel, message: self.spawn(self.bind(channel, message), now=True),
            CT.STATE_CLOSED: self.state_closed,
            CT.UNBIND: self.unbind,
            CT.UPDATE_TOKEN: lambda channel, message: self.spawn(self.update_token(channel, message), now=True),
            **{content_type: ignore for content_type in IGNORED},
        }

    # -- hello -------------------------------------------------------------------------
    async def hello(self, channel: Channel, hello: Message) -> bool:
        token = hello.str_header(Header.SESSION_TOKEN) or ""
        try:
            channel.caller = Caller(**await ask("the hello", self.link.hello, token, channel.fingerprint()))
            channel.token = token
        except PermissionError as ex:
            log.warning("router: %s %s refused: %s", channel.id, channel.peer, ex)
            await channel.send(channel.reply(hello, CT.RESULT, str(ex).encode(), result_success=boolean(False)))
            return False
        await channel.send(
            channel.reply(
                hello,
                CT.RESULT,
                result_success=boolean(True),
                connection_id=channel.id.encode(),
                router_id=self.router_id.encode(),
                hello_version=VERSION,
                supports_bind_success=boolean(True),
            )
        )
        self.channels.add(channel)
        self.link.connection_changed(channel.caller.identity_id, True)
        return True

    def unknown(self, channel: Channel, message: Message) -> None:
        log.warning("router: %s sent unknown content type %d, closing", channel.id, message.content_type)
        channel.close()

    async def update_token(self, channel: Channel, message: Message) -> None:
        """An SDK's refreshed API session token (OIDC): accepted if it names the same identity."""
        token = message.body.decode("utf-8", "replace")
        try:
            caller = Caller(**await ask("the token update", self.link.hello, token, channel.fingerprint()))
            if caller.identity_id != channel.caller.identity_id:
                raise PermissionError("the new token belongs to another identity")
        except PermissionError as ex:
            return await channel.send(channel.reply(message, CT.UPDATE_TOKEN_FAILURE, str(ex).encode()))
        channel.caller, channel.token = caller, token
        await channel.send(channel.reply(message, CT.UPDATE_TOKEN_SUCCESS))

    async def _grant(self, channel: Channel, message: Message, kind: str) -> Grant | None:
        conn_id = message.conn_id
        if conn_id is None:
            await channel.send(closed(0, "connId not set, required", message))
            return None
        try:
            token = message.body.decode("utf-8", "replace")
            return Grant(**await ask(f"the {kind} session", self.link.session, channel.caller, token, kind))
        except PermissionError as ex:
            reason = str(ex) or INVALID_SESSION
            await channel.send(closed(conn_id, reason, message))
            self.link.emit(
                "circuit" if kind == "Dial" else "terminator",
                "failed",
                identity_id=channel.caller.identity_id,
                router_id=self.router_id,
                reason=reason,
            )
            return None

    # -- bind ------------------------------------------------------------------------
    async def bind(self, channel: Channel, message: Message) -> None:
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
            router_id=self.router_id,
        )
        if binding.terminator.terminator_id not in self.bindings:  # unbound while the controller was writing
            await asyncio.to_thread(self.link.remove_terminator, terminator.terminator_id)
        elif message.bool_header(Header.SUPPORTS_BIND_SUCCESS):
            await channel.send(Message(CT.BIND_SUCCESS, b"", {Header.CONN_ID: u32(binding.conn_id)}))

    def unbind(self, channel: Channel, message: Message):
        binding = channel.conns.get(message.conn_id)
        if isinstance(binding, Binding):
            return self._drop_binding(binding)
        return None

    async def _drop_binding(self, binding: Binding) -> None:
        if binding.channel.conns.get(binding.conn_id) is binding:
            del binding.channel.conns[binding.conn_id]
        if self.bindings.pop(binding.terminator.terminator_id, None) is None:
            return
        await asyncio.to_thread(self.link.remove_terminator, binding.terminator.terminator_id)
        self.link.emit(
            "terminator",
            "deleted",
            terminator_id=binding.terminator.terminator_id,
            service_id=binding.grant.service_id,
            identity_id=binding.terminator.identity_id,
            router_id=self.router_id,
        )

    # -- connect ----------------------------------------------------------------------
    async def connect(self, channel: Channel, message: Message) -> None:
        """One request to the controller (``ControllerLink.dial``: session, terminator, path, circuit recorded),
        then the host here or the next router over a link; the dialer is told StateConnected once the host
        accepted, before any host data."""
        conn_id, dialer_key = message.conn_id, message.headers.get(Header.PUBLIC_KEY)
        if conn_id is None:
            return await channel.send(closed(0, "connId not set, required", message))
        caller, token = channel.caller, message.body.decode("utf-8", "replace")
        instance = message.str_header(Header.TERMINATOR_IDENTITY) or ""
        dial = {key: message.headers[key] for key in DIAL_COPIES if key in message.headers}
        try:
            route = await ask(
                "the dial",
                getattr(self.link, "dial_async", None) or self.link.dial,
                *(caller, token, instance, bool(dialer_key), encode_headers(dial)),
                now=getattr(self.link, "dial_now", None),
            )
        except (PermissionError, LookupError) as ex:
            reason = str(ex).strip("'\"") or INVALID_SESSION
            await channel.send(closed(conn_id, reason, message))
            self.link.emit("circuit", "failed", identity_id=caller.identity_id, router_id=self.router_id, reason=reason)
            return None
        service_id = route["service_id"]
        info = {
            "circuit_id": route["circuit_id"],
            "service_id": service_id,
            "identity_id": caller.identity_id,
            "host_id": route.get("host_id", ""),
            "terminator_id": route["terminator_id"],
            "path": list(route["path"]),
            "links": list(route["links"]),
        }
        if channel.closed:
            self._abandon(route, "the dialer left")
            return self.link.circuit_down({**info, "reason": "the dialer left"})
        if route.get("identity_name") and route["identity_name"] != caller.identity_name:
            # a channel this router verified alone (its controller away) learns its identity's name here
            caller = channel.caller = dataclasses.replace(caller, identity_name=route["identity_name"])
        dial[Header.DIALER_IDENTITY_ID] = caller.identity_id.encode()
        dial[Header.DIALER_IDENTITY_NAME] = caller.identity_name.encode()
        dialer = EdgeEnd(channel, conn_id)

        def connected(host_key: bytes | None, circuit: Circuit) -> None:
            """In the read loop that got the host's answer (the controller recorded the circuit already): the
            dialer gets StateConnected before any host data (which waits in the circuit meanwhile)."""
            circuit.first, circuit.info = True, info
            if channel.closed or circuit.closed:
                return
            out = channel.reply(message, CT.STATE_CONNECTED, conn_id=u32(conn_id), circuit_id=circuit.id.encode())
            if host_key:
                out.headers[Header.PUBLIC_KEY] = host_key
            channel.send_nowait(out)
            self.circuits.start(circuit)

        try:
            circuit = await self.dial(route, service_id, dialer, dial, connected)
        except DialFailed as ex:
            reason = f"dial failed: {ex}"
            self.link.circuit_down({**info, "reason": reason})
            await channel.send(closed(conn_id, reason, message))
            self.link.emit(
                "circuit",
                "failed",
                service_id=service_id,
                identity_id=caller.identity_id,
                router_id=self.router_id,
                reason=reason,
            )
            return None
        if channel.closed:  # the dialer left while the host was accepting
            return self.circuits.close(circuit, circuit.dialer, "peer closed")
        return None

    def dial(self, route: dict, service_id: str, dialer, headers: dict, connected) -> asyncio.Future[Circuit]:
        """Reach the route's terminator from here: its host on this router, or the next router over a link. The
        host's Dial (or the LinkRoute) leaves before this returns; the future returned, settled by the answer's
        callbacks (no task), is the circuit's. ``DialFailed``, from the call or the future, when it was not reached.

        ``connected(host_key, circuit)`` runs in the read loop that received the answer, before any data.
        """
        path, hop = route["path"], route["path"].index(self.router_id)
        if hop == len(path) - 1:
            binding = self.bindings.get(route["terminator_id"])
            if binding is None or binding.channel.closed:
                raise DialFailed(f"terminator {route['terminator_id']} is not bound on this router")
            host = binding.channel
            circuit = Circuit(route["circuit_id"], service_id, dialer, EdgeEnd(host, host.next_conn_id()))
            self.circuits.add(circuit)
            dialing = _Dialing(circuit, self.circuits.forget)
            dial, reply = self._dial_host(circuit, binding, headers, connected)
            host.when_replied(dial, reply, self.dial_timeout, dialing.host_answered)
            return dialing.future
        next_link = self.links.get(route["links"][hop])
        if next_link is None or next_link.closed:
            raise DialFailed(f"link {route['links'][hop]} is down")
        circuit = Circuit(route["circuit_id"], service_id, dialer, LinkEnd(next_link, route["circuit_id"]))
        self.circuits.add(circuit)
        dialing = _Dialing(circuit, lambda circuit: self.circuits.close(circuit, circuit.dialer, "dial failed"))
        timeout = self.dial_timeout + len(path) - 1 - hop
        if route.get("pushed"):
            self._dialed(circuit, timeout, connected, dialing)
        else:
            self._route_on(circuit, next_link, route, headers, timeout, connected, dialing)
        return dialing.future

    def _route_on(self, circuit: Circuit, next_link: Channel, route, headers, timeout, connected, dialing) -> None:
        """The route to the next router (LinkRoute), sent now; its answer settles ``dialing``."""
        request = Message(CT.LINK_ROUTE, json.dumps(route).encode(), dict(headers))

        def answered(reply: Message) -> None:
            if reply.bool_header(Header.RESULT_SUCCESS) and not circuit.closed:
                connected(reply.headers.get(Header.PUBLIC_KEY), circuit)

        reply = next_link.send_request(request, on_reply=answered)
        next_link.when_replied(request, reply, timeout, dialing.next_answered)

    def _dialed(self, circuit: Circuit, timeout: float, connected, dialing) -> None:
        """A route the controller pushed to the next routers: the next router's word (LinkDialed, maybe come
        already; ``connected`` runs in the read loop that got it) settles ``dialing``."""
        waiter = circuit.dialed = asyncio.get_running_loop().create_future()
        waiter.connected = connected
        when_done(waiter, timeout, dialing.next_answered)
        self.held(circuit.host.channel, circuit.id)

    def _abandon(self, route: dict, reason: str) -> None:
        """A dial this router answered will not go on: the next router of a pushed route closes its end."""
        if route.get("pushed") and route.get("links"):
            link = self.links.get(route["links"][0])
            if link is not None:
                link.write(link_close_frame(route["circuit_id"].encode(), reason))

    def _dial_host(self, circuit: Circuit, binding: Binding, headers: dict, connected):
        """The host's Dial, sent now: ``(the Dial, the future of its answer)``."""
        dial = Message(
            CT.DIAL,
            binding.token,
            {
                Header.CONN_ID: u32(binding.conn_id),
                Header.ROUTER_PROVIDED_CONN_ID: u32(circuit.host.key),
                Header.CIRCUIT_ID: circuit.id.encode(),
                Header.CALLER_ID: b"",
                **headers,
            },
        )

        def answered(reply: Message) -> None:
            if reply.content_type == CT.DIAL_SUCCESS:
                self._host_conn_id(circuit, reply)
                connected(binding.terminator.host_public_key, circuit)

        return dial, binding.channel.send_request(dial, on_reply=answered)

    def _host_conn_id(self, circuit: Circuit, reply: Message) -> None:
        """Older SDKs ignore the router-provided id and name their own in DialSuccess: use theirs."""
        host = circuit.host
        if len(reply.body) != 4:
            return
        chosen = int.from_bytes(reply.body, "little")
        if chosen != host.key:
            if host.channel.conns.get(host.key) is circuit:
                del host.channel.conns[host.key]
            host.rekey(chosen)
            host.channel.conns[chosen] = circuit
            host.channel.send_nowait(host.channel.reply(reply, CT.STATE_CONNECTED, conn_id=u32(chosen)))

    # -- data and closes -------------------------------------------------------------------
    def data(self, channel: Channel, message: Message):
        conn_id = message.conn_id
        circuit = channel.conns.get(conn_id)
        if type(circuit) is not Circuit:
            if conn_id is not None and circuit is None and not channel.congested():
                channel.send_nowait(closed(conn_id, "unknown connection"))
            return None
        source = circuit.dialer if circuit.dialer.channel is channel and circuit.dialer.key == conn_id else circuit.host
        return self.circuits.forward(circuit, source, message)

    def state_closed(self, channel: Channel, message: Message):
        entry = channel.conns.get(message.conn_id)
        if isinstance(entry, Binding):
            return self._drop_binding(entry)
        if isinstance(entry, Circuit):
            self.circuits.close(entry, self.circuits.end_of(entry, channel, message.conn_id), message.body.decode())
        return None

    def revoke(self, kind: str, revoked_id: str) -> None:
        """A session went: its bindings end. An API session went: its channels close."""
        if kind == "apiSession":
            for channel in list(self.channels):
                if channel.caller and channel.caller.api_session_id == revoked_id:
                    log.info("router: %s closed, its api session was removed", channel.id)
                    channel.close()
            return
        for binding in [b for b in self.bindings.values() if b.grant.session_id == revoked_id]:
            binding.channel.send_nowait(closed(binding.conn_id, "session removed"))
            self.spawn(self._drop_binding(binding))

    def drop_terminators(self, terminator_ids) -> None:
        """The controller refused these terminators at a reconcile (their service went): those bindings end."""
        for terminator_id in terminator_ids:
            binding = self.bindings.get(terminator_id)
            if binding is not None:
                binding.channel.send_nowait(closed(binding.conn_id, "terminator removed by the controller"))
                if binding.channel.conns.get(binding.conn_id) is binding:
                    del binding.channel.conns[binding.conn_id]
                del self.bindings[terminator_id]

    async def channel_closed(self, channel: Channel) -> None:
        """The SDK went away: close its circuits' other ends, drop its bindings."""
        self.circuits.channel_gone(channel, "peer closed")
        for entry in list(channel.conns.values()):
            if isinstance(entry, Binding):
                await self._drop_binding(entry)
        channel.conns.clear()
        if channel in self.channels:
            self.channels.discard(channel)
            self.link.connection_changed(channel.caller.identity_id, False)


class _Dialing:
    """One dial's future (:meth:`Edge.dial`), settled by the callback of the answer it waits on: the circuit once
    reached, else ``DialFailed`` after ``give_up(circuit)``. Nothing is settled once the future was cancelled."""

    __slots__ = ("circuit", "give_up", "future")

    def __init__(self, circuit: Circuit, give_up: Callable[[Circuit], None]):
        self.circuit, self.give_up = circuit, give_up
        self.future: asyncio.Future[Circuit] = asyncio.get_running_loop().create_future()

    def host_answered(self, reply: asyncio.Future) -> None:
        """The host's answer to its Dial (None: none came, or its channel closed)."""
        answer = outcome(reply)
        if answer is None:
            return self._settle("no answer from the host")
        return self._settle(None if answer.content_type == CT.DIAL_SUCCESS else answer.body.decode("utf-8", "replace"))

    def next_answered(self, reply: asyncio.Future) -> None:
        """The next router's answer to a LinkRoute, or its LinkDialed on a pushed route (a reason: the circuit closed
        meanwhile, the link went or the next router closed it)."""
        answer = outcome(reply)
        if answer is None:
            return self._settle("no answer over the link")
        if isinstance(answer, str):
            return self._settle(answer)
        accepted = answer.bool_header(Header.RESULT_SUCCESS)
        return self._settle(None if accepted else answer.body.decode("utf-8", "replace"))

    def _settle(self, failure: str | None) -> None:
        if self.future.done():
            return
        if failure is None:
            self.future.set_result(self.circuit)
        else:
            self.give_up(self.circuit)
            self.future.set_exception(DialFailed(failure))


def ignore(channel: Channel, message: Message) -> None:
    """Late replies and optional features: accepted, not acted on."""
