"""The link forwarder: what a router does with the messages other routers send over links, with its table.

:class:`Forwarder` handles a link's content types (``router/peer_links.py`` serves the link channels and hands
each message to :attr:`Forwarder.handlers`): a LinkRoute dials onwards (the host on this router, or the next
link of the path, through :meth:`router.edge.Edge.dial`) and answers; payloads, closes, pauses and resumes move
the circuit's data (``router/circuits.py``).

A route the controller pushed (``route``, :meth:`Forwarder.route_pushed`) dials onwards the same way and tells
the previous router with a LinkDialed. That word may reach the previous router before the controller's answer
to it does: it is then held (:class:`Held`, with what follows it) until that router makes the circuit, for at
most ``HELD_SECONDS`` (then the circuit is closed back), at most ``MAX_HELD`` circuits at once.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from typing import Callable

from protocol import ROUTE, InvalidArgs, check, decode_headers
from router.channel import Channel
from router.circuits import Circuit, Circuits, LinkEnd, link_close_frame
from router.edge import DIAL_COPIES, DialFailed, Edge
from router.wire import ContentType as CT
from router.wire import Header, Message, boolean

log = logging.getLogger("router")
#: circuits whose next router's word came before this router's own answer from the controller, at most
MAX_HELD = 10_000
#: and for at most this long (the controller's answer takes at most its request timeout), this many frames and bytes
#: each, this many bytes in all
HELD_SECONDS, HELD_FRAMES, HELD_BYTES, HELD_TOTAL = 10.0, 64, 2**20, 64 * 2**20


@dataclass
class HeldEntry:
    """What one circuit's link sent before the circuit existed here."""

    link: Channel
    expiry: asyncio.TimerHandle
    messages: list[Message] = field(default_factory=list)
    size: int = 0


class Held:
    """Link messages for circuits this router does not have yet: a LinkDialed and what followed it on that link."""

    def __init__(self, *, limit: int = MAX_HELD, seconds: float = HELD_SECONDS):
        self.limit, self.seconds = limit, seconds
        self.entries: dict[str, HeldEntry] = {}
        #: bytes held in all
        self.size = 0

    def hold(self, link: Channel, message: Message) -> None:
        """Keep ``message`` (a LinkDialed starts an entry; a payload or close joins one, else it is dropped)."""
        circuit_id = message.str_header(Header.CIRCUIT_ID) or ""
        entry = self.entries.get(circuit_id)
        if entry is None:
            if message.content_type != CT.LINK_DIALED or not circuit_id:
                return
            if len(self.entries) >= self.limit:
                log.warning(
                    "router: %d dials wait for the controller's answer, closing circuit %s", self.limit, circuit_id
                )
                return link.write(link_close_frame(circuit_id.encode(), "too many dials waiting on the router"))
            expiry = asyncio.get_running_loop().call_later(self.seconds, self._expire, circuit_id)
            entry = self.entries[circuit_id] = HeldEntry(link, expiry)
        elif entry.link is not link:
            return
        entry.messages.append(message)
        entry.size += len(message.body)
        self.size += len(message.body)
        if len(entry.messages) > HELD_FRAMES or entry.size > HELD_BYTES or self.size > HELD_TOTAL:
            self._drop(circuit_id, "too much data before the dial was answered")

    def take(self, link: Channel, circuit_id: str) -> list[Message]:
        """What was held for ``circuit_id`` on ``link``, in order (no longer held)."""
        entry = self.entries.get(circuit_id)
        if entry is None or entry.link is not link:
            return []
        self._remove(circuit_id)
        return entry.messages

    def _expire(self, circuit_id: str) -> None:
        entry = self.entries.get(circuit_id)
        if entry is None:
            return
        if entry.messages[0].bool_header(Header.RESULT_SUCCESS):  # the next router holds a circuit: it closes
            self._drop(circuit_id, "the dial was not answered in time")
        else:  # a failure for a dial this router gave up already: nothing to close
            self._remove(circuit_id)

    def _remove(self, circuit_id: str) -> HeldEntry:
        entry = self.entries.pop(circuit_id)
        entry.expiry.cancel()
        self.size -= entry.size
        return entry

    def _drop(self, circuit_id: str, reason: str) -> None:
        entry = self._remove(circuit_id)
        log.info("router: circuit %s closed: %s", circuit_id, reason)
        entry.link.write(link_close_frame(circuit_id.encode(), reason))


class Forwarder:
    """The link side of this router's circuits; ``handlers`` is the link channels' dispatch table."""

    def __init__(self, edge: Edge, circuits: Circuits, *, router_id: str):
        self.edge, self.circuits, self.router_id = edge, circuits, router_id
        self.held = Held()
        edge.held = self.release
        self.handlers = {
            CT.LINK_ROUTE: self.route_in,
            CT.LINK_DIALED: self.link_dialed,
            CT.LINK_PAYLOAD: self.link_payload,
            CT.LINK_CLOSE: self.link_close,
            CT.LINK_PAUSE: circuits.pause,
            CT.LINK_RESUME: circuits.resume,
        }

    def route_in(self, link: Channel, message: Message) -> None:
        """A LinkRoute from the previous router: dial onwards (host here, or the next link), then answer."""
        try:
            route = json.loads(message.body)
            route["circuit_id"], route["service_id"] = str(route["circuit_id"]), str(route.get("service_id", ""))
        except (ValueError, KeyError, TypeError):
            log.warning("router: %s %s sent a malformed route, closing", link.id, link.peer)
            return link.close()
        headers = {key: value for key, value in message.headers.items() if key in DIAL_COPIES}
        for key in (Header.DIALER_IDENTITY_ID, Header.DIALER_IDENTITY_NAME):
            if key in message.headers:
                headers[key] = message.headers[key]

        def answer(host_key: bytes | None, failure: str | None) -> None:
            out = link.reply(message, CT.RESULT, (failure or "").encode(), result_success=boolean(failure is None))
            if host_key:
                out.headers[Header.PUBLIC_KEY] = host_key
            link.send_nowait(out)

        self._onwards(link, route, headers, answer)

    def route_pushed(self, args: dict) -> None:
        """The controller pushed a route through this router (``route``; in the loop): dial onwards as for a
        LinkRoute, and tell the previous router with a LinkDialed."""
        try:
            check("route", ROUTE, args)
            path, links, circuit_id = args["path"], args["links"], args["circuitId"]
            if not circuit_id or len(links) != len(path) - 1 or not all(isinstance(x, str) for x in path + links):
                raise InvalidArgs("route: path and links are not router and link ids")
            hop = path.index(self.router_id) if self.router_id in path else 0
            headers = {key: value for key, value in decode_headers(args["headers"]).items() if key in DIAL_COPIES}
            link_id = links[hop - 1] if 0 < hop <= len(links) else None
        except (InvalidArgs, TypeError):
            log.warning("router: the controller pushed a malformed route, ignored")
            return
        if link_id is None:
            log.warning("router: the controller pushed a route that does not cross this router, ignored")
            return
        link = self.edge.links.get(link_id)
        if link is None or link.closed:  # the previous router finds out when its link goes
            log.info("router: circuit %s: link %s is down, the route pushed cannot be taken", circuit_id, link_id)
            return
        headers[Header.DIALER_IDENTITY_ID] = args["identityId"].encode()
        headers[Header.DIALER_IDENTITY_NAME] = args["identityName"].encode()
        route = {
            "circuit_id": circuit_id,
            "service_id": args["serviceId"],
            "terminator_id": args["terminatorId"],
            "path": list(path),
            "links": list(links),
            "pushed": True,
        }

        def answer(host_key: bytes | None, failure: str | None) -> None:
            word = Message(
                CT.LINK_DIALED,
                (failure or "").encode(),
                {Header.CIRCUIT_ID: circuit_id.encode(), Header.RESULT_SUCCESS: boolean(failure is None)},
            )
            if host_key:
                word.headers[Header.PUBLIC_KEY] = host_key
            link.send_nowait(word)

        self._onwards(link, route, headers, answer)  # the host's Dial leaves now, not a loop turn later

    def _onwards(
        self, link: Channel, route: dict, headers: dict, answer: Callable[[bytes | None, str | None], None]
    ) -> None:
        """Dial onwards from the circuit's end on ``link`` now; ``answer(host_key, None)`` once the host (or the next
        router) accepted, ``answer(None, reason)`` if not: by callbacks, no task."""

        def connected(host_key: bytes | None, circuit: Circuit) -> None:
            answer(host_key, None)
            self.circuits.start(circuit)

        def settled(dialing: asyncio.Future) -> None:
            if not dialing.cancelled() and isinstance(dialing.exception(), DialFailed):
                answer(None, str(dialing.exception()))

        try:
            if self.router_id not in route.get("path", []):
                raise DialFailed("this router is not on the route")
            end = LinkEnd(link, route["circuit_id"])
            self.edge.dial(route, route["service_id"], end, headers, connected).add_done_callback(settled)
        except DialFailed as ex:
            answer(None, str(ex))

    def link_dialed(self, link: Channel, message: Message) -> None:
        """The next router's word on a pushed route: its host (or the router after it) accepted, or why not. Held
        when this router has no such circuit yet (its answer from the controller is still on its way)."""
        circuit = link.conns.get(message.str_header(Header.CIRCUIT_ID))
        if type(circuit) is not Circuit:
            return self.held.hold(link, message)
        waiter = circuit.dialed
        if waiter is None or waiter.done() or circuit.host.channel is not link:
            return None
        if message.bool_header(Header.RESULT_SUCCESS) and not circuit.closed:
            waiter.connected(message.headers.get(Header.PUBLIC_KEY), circuit)
        waiter.set_result(message)
        return None

    def release(self, link: Channel, circuit_id: str) -> None:
        """The circuit now exists: what was held for it is handled, in order."""
        for message in self.held.take(link, circuit_id):
            self.handlers[message.content_type](link, message)

    def link_payload(self, link: Channel, message: Message):
        circuit = link.conns.get(message.str_header(Header.CIRCUIT_ID))
        if type(circuit) is not Circuit:
            return self.held.hold(link, message) if self.held.entries else None
        source = circuit.dialer if circuit.dialer.channel is link else circuit.host
        return self.circuits.forward(circuit, source, message)

    def link_close(self, link: Channel, message: Message) -> None:
        circuit = link.conns.get(message.str_header(Header.CIRCUIT_ID))
        if isinstance(circuit, Circuit):
            source = circuit.dialer if circuit.dialer.channel is link else circuit.host
            self.circuits.close(circuit, source, message.body.decode("utf-8", "replace") or "closed")
        elif self.held.entries:
            self.held.hold(link, message)
