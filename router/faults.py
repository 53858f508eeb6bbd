"""Faults on this router's edge messages: drop or delay frames of SDK channels, as the controller says.

The controller decides which faults are on and for how long (on its own clock) and tells the router the
whole set whenever it changes (``ControllerLink.watch_edge_faults``; the ``edgeFaults`` push of the control
channel). The router never times a fault itself.

While no fault is on, an SDK channel's ``faults`` attribute is None and its reads and writes pay that one
check. While one is on, every SDK channel points at the router's :class:`EdgeFaults`, which sees each frame
read from an SDK (``fromSdk``) and each frame written to one (``toSdk``). The first fault (oldest first)
whose direction and content types match the frame decides: drop it, or hold it for the fault's latency. A
channel's held frames leave in order, and a frame no fault touches waits behind frames held before it, so
a delay never reorders a connection's stream. Hits are counted per fault and reported in batches.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from router.channel import CHANNEL_HIGH
from router.wire import Message

if TYPE_CHECKING:
    from router.channel import Channel

log = logging.getLogger("router")
FROM_SDK, TO_SDK = 1, 2
DIRECTIONS = {"fromSdk": FROM_SDK, "toSdk": TO_SDK, "both": FROM_SDK | TO_SDK}
#: a frame's content type: int32 LE after the 4-byte magic
_CONTENT_TYPE = struct.Struct("<i")
#: bytes of an SDK's frames held before the router stops reading that channel until half of them left
HELD_IN_LIMIT = 4 * 2**20
#: seconds between hit reports to the controller (at most one report per interval)
REPORT_INTERVAL = 0.2


@dataclass(frozen=True)
class EdgeFault:
    id: str
    directions: int
    content_types: frozenset[int] | None  # None: every content type
    drop: bool
    latency: float  # seconds

    @classmethod
    def from_wire(cls, value: dict) -> "EdgeFault":
        types = value.get("contentTypes") or ()
        return cls(
            str(value["id"]),
            DIRECTIONS[value.get("direction") or "both"],
            frozenset(int(t) for t in types) or None,
            bool(value.get("drop")),
            max(0, int(value.get("latencyMs") or 0)) / 1000,
        )


class _Held:
    """One channel's frames held back in one direction, released in order by one task."""

    __slots__ = ("items", "task", "size", "room")

    def __init__(self):
        self.items: deque[tuple[float, object]] = deque()
        self.task: asyncio.Task | None = None
        #: bytes held (bounded: see HELD_IN_LIMIT and Channel.congested)
        self.size = 0
        #: set when a reader paused on a full hold may read on
        self.room: asyncio.Event | None = None

    def drained(self, limit: int) -> None:
        if self.room is not None and self.size <= limit:
            self.room.set()
            self.room = None

    async def wait_room(self) -> None:
        if self.room is None:
            self.room = asyncio.Event()
        await self.room.wait()


class EdgeFaults:
    """The router's edge faults (see the module text); everything runs in the router's event loop."""

    def __init__(self, report: Callable[[int, dict[str, int]], None]):
        self.faults: tuple[EdgeFault, ...] = ()
        #: the controller's generation of this set (acknowledged with each hit report)
        self.generation = 0
        #: SDK channels of this router (while any fault is on, or frames are held, each points here)
        self.channels: set[Channel] = set()
        self._report = report
        self._hits: dict[str, int] = {}
        self._reporting: asyncio.TimerHandle | None = None

    @property
    def active(self) -> bool:
        return bool(self.faults)

    # -- the set the controller sent ---------------------------------------------------------
    def replace(self, generation: int, faults: list[dict]) -> None:
        """The controller's whole set, from now on; acknowledged at once (with the hits counted so far)."""
        try:
            self.faults = tuple(EdgeFault.from_wire(value) for value in faults)
        except (KeyError, TypeError, ValueError) as ex:
            log.warning("router: the controller sent edge faults this router cannot read (%s), ignoring them", ex)
            self.faults = ()
        if faults or self.generation:
            log.info("router: %d edge fault(s) on", len(self.faults))
        self.generation = generation
        for channel in self.channels:
            self._attach(channel)
        if faults or self._hits or generation:
            self._flush()

    def opened(self, channel: Channel) -> None:
        self.channels.add(channel)
        self._attach(channel)

    def closed(self, channel: Channel) -> None:
        self.channels.discard(channel)

    def _attach(self, channel: Channel) -> None:
        held = channel.held_in is not None and channel.held_in.items
        held = held or (channel.held_out is not None and channel.held_out.items)
        channel.faults = self if self.faults or held else None

    # -- frames ---------------------------------------------------------------------------
    def _match(self, direction: int, content_type: int) -> EdgeFault | None:
        for fault in self.faults:
            if fault.directions & direction and (fault.content_types is None or content_type in fault.content_types):
                self._hit(fault)
                return fault
        return None

    def hello(self, channel: Channel, message: Message) -> float | None:
        """An SDK's first frame: None to drop it, else the seconds to hold it."""
        fault = self._match(FROM_SDK, message.content_type)
        if fault is None:
            return 0.0
        return None if fault.drop else fault.latency

    def incoming(self, channel: Channel, message: Message, handlers, unknown):
        """A frame read from an SDK: dispatched now, dropped, or held (what ``Channel.dispatch`` returns)."""
        fault = self._match(FROM_SDK, message.content_type)
        if fault is not None and fault.drop:
            return None
        held = channel.held_in
        if fault is None and (held is None or not held.items):
            return channel.dispatch(message, handlers, unknown, True)
        if held is None:
            held = channel.held_in = _Held()
        delay = fault.latency if fault is not None else 0.0
        self._hold(channel, held, delay, (message, handlers, unknown), self._release_in)
        held.size += len(message.body) + 64
        if held.size > HELD_IN_LIMIT:  # the SDK sends faster than the delay lets through: stop reading it
            return held.wait_room()
        return None

    def outgoing(self, channel: Channel, data: bytes) -> None:
        """An encoded frame for an SDK (each write is one frame): written now, dropped, or held."""
        (content_type,) = _CONTENT_TYPE.unpack_from(data, 4)
        fault = self._match(TO_SDK, content_type)
        if fault is not None and fault.drop:
            return
        held = channel.held_out
        if fault is None and (held is None or not held.items):
            channel.writer.write(data)
            return
        if held is None:
            held = channel.held_out = _Held()
        self._hold(channel, held, fault.latency if fault is not None else 0.0, data, self._release_out)
        held.size += len(data)

    def congested(self, channel: Channel) -> bool:
        """``Channel.congested`` while a fault is on: held frames count as written but not yet read."""
        held = channel.held_out
        return channel.transport.get_write_buffer_size() + (held.size if held is not None else 0) > CHANNEL_HIGH

    def _hold(self, channel: Channel, held: _Held, delay: float, item, release) -> None:
        loop = asyncio.get_running_loop()
        held.items.append((loop.time() + delay, item))  # released first in, first out: never before earlier ones
        if held.task is None:
            held.task = loop.create_task(release(channel, held))

    async def _release_in(self, channel: Channel, held: _Held) -> None:
        loop = asyncio.get_running_loop()
        try:
            while held.items and not channel.closed:
                due, (message, handlers, unknown) = held.items[0]
                if due > loop.time():
                    await asyncio.sleep(due - loop.time())
                    continue
                held.items.popleft()
                held.size -= len(message.body) + 64
                held.drained(HELD_IN_LIMIT // 2)
                pending = channel.dispatch(message, handlers, unknown, True)
                if pending is not None:
                    await pending
        except asyncio.CancelledError:
            channel.close()
            raise
        except (ConnectionError, OSError):
            channel.close()
        except Exception:  # noqa: BLE001 - as the channel's own read loop: one channel's bug closes it only
            log.exception("router: %s %s failed, closing", channel.id, channel.peer)
            channel.close()
        finally:
            if channel.closed:
                held.items.clear()
                held.size = 0
            held.drained(HELD_IN_LIMIT // 2)
            held.task = None
            self._attach(channel)

    async def _release_out(self, channel: Channel, held: _Held) -> None:
        loop = asyncio.get_running_loop()
        try:
            while held.items and not channel.closed:
                due, data = held.items[0]
                if due > loop.time():
                    await asyncio.sleep(due - loop.time())
                    continue
                held.items.popleft()
                held.size -= len(data)
                channel.writer.write(data)
                channel.wake_writers()
        finally:
            if channel.closed:
                held.items.clear()
                held.size = 0
            held.task = None
            self._attach(channel)

    # -- hits ---------------------------------------------------------------------------------
    def _hit(self, fault: EdgeFault) -> None:
        self._hits[fault.id] = self._hits.get(fault.id, 0) + 1
        if self._reporting is None:
            self._reporting = asyncio.get_running_loop().call_later(REPORT_INTERVAL, self._flush)

    def _flush(self) -> None:
        if self._reporting is not None:
            self._reporting.cancel()
            self._reporting = None
        hits, self._hits = self._hits, {}
        try:
            self._report(self.generation, hits)
        except Exception as ex:  # noqa: BLE001 - a lost report costs counts, never the data path
            log.info("router: edge fault hits not reported (%s)", ex)
