"""Circuits on this router: two ends, data forwarded between them, per-circuit backpressure.

An end is an SDK connection (an edge channel and its conn id) or a link (a link channel and the circuit
id). A one-hop circuit has two edge ends; the first router of a multi-hop circuit has an edge end and a
link end, a transit router two link ends, the last router a link end and the host's edge end. Forwarding
is the same for all: a Data (edge) or LinkPayload (link) frame for the other end, through that end's
:class:`~router.channel.Outlet`.

Backpressure, per circuit: when an end's queue passes the router's circuit buffer,
* if the data came over a link, the router asks the link peer to pause that circuit (LinkPause) and to
  resume it (LinkResume) once the queue drained; the link itself is never stalled;
* if it came from an SDK channel alone on it, that channel's reading waits for the queue to drain: a slow
  reader slows its sender down (bulk transfers to slow readers keep working);
* if it came from an SDK channel that carries other circuits too (the edge protocol has no per-connection
  flow control), the channel keeps being read: the circuit's queue may grow to four times the buffer
  before the channel waits, and a reader that makes no progress for ``stall_timeout`` meanwhile loses its
  circuit (both ends are told "circuit stalled: the reader stopped reading") and the channel reads on.
  So a stopped reader holds its sender's other circuits for at most ``stall_timeout``, and only once its
  queue is full.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Callable

from router.channel import Channel, Outlet
from router.wire import ContentType as CT
from router.wire import Header, Message, frame, u32

log = logging.getLogger("router")
#: headers a data frame keeps from hop to hop
DATA_COPIES = (Header.FLAGS, Header.UUID, Header.SEQ)
#: per circuit end: queued bytes above this apply backpressure
CIRCUIT_BUFFER = 4 * 2**20


def link_close_frame(circuit_id: bytes, reason: str) -> bytes:
    """A LinkClose frame: the circuit ended, ``reason`` is what its far end is told."""
    return frame(CT.LINK_CLOSE, {Header.CIRCUIT_ID: circuit_id}, reason.encode())


class End:
    """One side of a circuit on this router."""

    __slots__ = ("channel", "key", "outlet", "_key_header")
    link = False

    def __init__(self, channel: Channel, key):
        self.channel, self.key = channel, key
        self.outlet = Outlet(channel)

    def data(self, body: bytes, headers: dict[int, bytes]) -> bytes:
        raise NotImplementedError

    def closed_frame(self, reason: str) -> bytes:
        raise NotImplementedError


class EdgeEnd(End):
    """An SDK connection: ``key`` is its conn id on the channel."""

    __slots__ = ()

    def __init__(self, channel: Channel, key: int):
        super().__init__(channel, key)
        self._key_header = u32(key)

    def rekey(self, conn_id: int) -> None:
        self.key, self._key_header = conn_id, u32(conn_id)

    def data(self, body: bytes, headers: dict[int, bytes]) -> bytes:
        headers[Header.CONN_ID] = self._key_header
        return frame(CT.DATA, headers, body, self.channel.next_seq())

    def closed_frame(self, reason: str) -> bytes:
        return frame(CT.STATE_CLOSED, {Header.CONN_ID: self._key_header}, reason.encode(), self.channel.next_seq())


class LinkEnd(End):
    """A link to the next or previous router: ``key`` is the circuit id."""

    __slots__ = ()
    link = True

    def __init__(self, channel: Channel, key: str):
        super().__init__(channel, key)
        self._key_header = key.encode()

    def data(self, body: bytes, headers: dict[int, bytes]) -> bytes:
        headers[Header.CIRCUIT_ID] = self._key_header
        return frame(CT.LINK_PAYLOAD, headers, body)

    def closed_frame(self, reason: str) -> bytes:
        return link_close_frame(self._key_header, reason)

    def control(self, content_type: int) -> None:
        """Pause or resume: straight to the socket, ahead of queued data."""
        self.channel.write(frame(content_type, {Header.CIRCUIT_ID: self._key_header}))


@dataclass(eq=False)
class Circuit:
    id: str
    service_id: str
    #: the dialer's side first (an edge end on the first router, a link end elsewhere)
    dialer: End
    host: End
    #: this router took the dial (it reports the circuit to the controller)
    first: bool = False
    open: bool = False
    closed: bool = False
    queued: list[tuple[End, Message]] = field(default_factory=list)
    moved: dict[str, int] = field(default_factory=lambda: {"dialer": 0, "host": 0})
    info: dict = field(default_factory=dict)
    #: closes the circuit if its reader makes no progress (see the module text)
    watchdog: asyncio.Task | None = None
    #: a route the controller pushed: done with the next router's LinkDialed, or the reason the circuit closed
    dialed: asyncio.Future | None = None

    def other(self, end: End) -> End:
        return self.host if end is self.dialer else self.dialer

    def ends(self) -> tuple[End, End]:
        return self.dialer, self.host


class Circuits:
    """Every circuit on this router; forwarding, closing and backpressure."""

    def __init__(
        self, on_gone: Callable[[Circuit, str], None], *, buffer: int = CIRCUIT_BUFFER, stall_timeout: float = 5.0
    ):
        #: circuit id -> circuit
        self.by_id: dict[str, Circuit] = {}
        self.on_gone, self.buffer, self.stall_timeout = on_gone, buffer, stall_timeout

    def add(self, circuit: Circuit) -> None:
        self.by_id[circuit.id] = circuit
        for end in circuit.ends():
            end.channel.conns[end.key] = circuit

    def end_of(self, circuit: Circuit, channel: Channel, key) -> End | None:
        for end in circuit.ends():
            if end.channel is channel and end.key == key:
                return end
        return None

    # -- data ------------------------------------------------------------------------
    def forward(self, circuit: Circuit, source: End, message: Message):
        """Pass ``message`` to the other end; an awaitable when the source must wait (see the module text)."""
        if not circuit.open:
            circuit.queued.append((source, message))
            return None
        target = circuit.other(source)
        body = message.body
        circuit.moved["dialer" if source is circuit.dialer else "host"] += len(body)
        src_headers = message.headers
        headers = {key: src_headers[key] for key in DATA_COPIES if key in src_headers}
        outlet = target.outlet
        outlet.put(target.data(body, headers))
        if outlet.pending_bytes > self.buffer:
            return self._backpressure(circuit, source, target)
        return None

    def start(self, circuit: Circuit) -> None:
        """The circuit is connected end to end: data queued meanwhile goes on, in order."""
        circuit.open = True
        queued, circuit.queued = circuit.queued, []
        for source, message in queued:
            self.forward(circuit, source, message)

    def _backpressure(self, circuit: Circuit, source: End, target: End):
        if source.link:
            if target.outlet.on_writable is None:
                source.control(CT.LINK_PAUSE)
                target.outlet.on_writable = lambda: None if circuit.closed else source.control(CT.LINK_RESUME)
            return None
        shared = sum(1 for entry in source.channel.conns.values() if isinstance(entry, Circuit)) > 1
        if not shared:
            return self._wait(circuit, target, None)
        if circuit.watchdog is None:
            circuit.watchdog = asyncio.get_running_loop().create_task(self._watch(circuit, target))
        if target.outlet.pending_bytes > 4 * self.buffer:
            return self._wait(circuit, target, self.stall_timeout)
        return None

    async def _watch(self, circuit: Circuit, target: End) -> None:
        try:
            await self._wait(circuit, target, self.stall_timeout)
        finally:
            circuit.watchdog = None

    async def _wait(self, circuit: Circuit, target: End, timeout: float | None) -> None:
        outlet = target.outlet
        while outlet.pending_bytes > self.buffer // 2 and not circuit.closed and not target.channel.closed:
            try:
                await asyncio.wait_for(outlet.wait_progress(), timeout)
            except asyncio.TimeoutError:
                if circuit.closed:
                    return
                log.warning("router: circuit %s stalled (its reader stopped), closing it", circuit.id)
                self.close(circuit, None, "circuit stalled: the reader stopped reading")
                return

    # -- link control ------------------------------------------------------------------
    def pause(self, channel: Channel, message: Message) -> None:
        circuit = channel.conns.get(message.str_header(Header.CIRCUIT_ID))
        if isinstance(circuit, Circuit):
            end = self.end_of(circuit, channel, circuit.id)
            if end is not None:
                end.outlet.paused = True

    def resume(self, channel: Channel, message: Message) -> None:
        circuit = channel.conns.get(message.str_header(Header.CIRCUIT_ID))
        if isinstance(circuit, Circuit):
            end = self.end_of(circuit, channel, circuit.id)
            if end is not None:
                end.outlet.resume()

    # -- closing -----------------------------------------------------------------------
    def close(self, circuit: Circuit, source: End | None, reason: str) -> None:
        """End ``circuit``: every end but ``source`` is told ``reason``; the circuit is forgotten."""
        if circuit.closed:
            return
        circuit.closed = True
        if circuit.dialed is not None and not circuit.dialed.done():
            circuit.dialed.set_result(reason)
        for end in circuit.ends():
            if end is not source:
                end.outlet.paused = False
                end.outlet.put(end.closed_frame(reason))
            if end.channel.conns.get(end.key) is circuit:
                del end.channel.conns[end.key]
            end.outlet.progressed()
        if self.by_id.pop(circuit.id, None) is not None:
            self.on_gone(circuit, reason)

    def forget(self, circuit: Circuit) -> None:
        """Drop ``circuit`` without telling anyone (a dial that did not complete)."""
        circuit.closed = True
        for end in circuit.ends():
            if end.channel.conns.get(end.key) is circuit:
                del end.channel.conns[end.key]
        self.by_id.pop(circuit.id, None)

    def channel_gone(self, channel: Channel, reason: str) -> None:
        """A channel or link went: each circuit on it ends, its other end told ``reason``."""
        for key, entry in list(channel.conns.items()):
            if isinstance(entry, Circuit):
                end = self.end_of(entry, channel, key)
                self.close(entry, end, reason)
