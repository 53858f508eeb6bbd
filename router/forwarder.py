"""The link forwarder: what a router does with the messages other routers send over links, with its table.

:class:`Forwarder` handles a link's content types (``router/peer_links.py`` serves the link channels and hands
each message to :attr:`Forwarder.handlers`): a LinkRoute dials onwards (the host on this router, or the next
link of the path, through :meth:`router.edge.Edge.dial`) and answers; payloads, closes, pauses and resumes move
the circuit's data (``router/circuits.py``).
"""

from __future__ import annotations

import json
import logging

from router.channel import Channel
from router.circuits import Circuit, Circuits, LinkEnd
from router.edge import DIAL_COPIES, DialFailed, Edge
from router.wire import ContentType as CT
from router.wire import Header, Message, boolean

log = logging.getLogger("router")


class Forwarder:
    """The link side of this router's circuits; ``handlers`` is the link channels' dispatch table."""

    def __init__(self, edge: Edge, circuits: Circuits, *, router_id: str, spawn):
        self.edge, self.circuits, self.router_id, self.spawn = edge, circuits, router_id, spawn
        self.handlers = {
            CT.LINK_ROUTE: lambda channel, message: self.spawn(self.route_in(channel, message)),
            CT.LINK_PAYLOAD: self.link_payload,
            CT.LINK_CLOSE: self.link_close,
            CT.LINK_PAUSE: circuits.pause,
            CT.LINK_RESUME: circuits.resume,
        }

    async def route_in(self, link: Channel, message: Message) -> None:
        """A LinkRoute from the previous router: dial onwards (host here, or the next link), then answer."""
        try:
            route = json.loads(message.body)
            circuit_id, service_id = str(route["circuit_id"]), str(route.get("service_id", ""))
        except (ValueError, KeyError, TypeError):
            log.warning("router: %s %s sent a malformed route, closing", link.id, link.peer)
            return link.close()
        headers = {key: value for key, value in message.headers.items() if key in DIAL_COPIES}
        for key in (Header.DIALER_IDENTITY_ID, Header.DIALER_IDENTITY_NAME):
            if key in message.headers:
                headers[key] = message.headers[key]

        def connected(host_key: bytes | None, circuit: Circuit) -> None:
            out = link.reply(message, CT.RESULT, result_success=boolean(True))
            if host_key:
                out.headers[Header.PUBLIC_KEY] = host_key
            link.send_nowait(out)
            self.circuits.start(circuit)

        try:
            if self.router_id not in route.get("path", []):
                raise DialFailed("this router is not on the route")
            await self.edge.dial(route, service_id, LinkEnd(link, circuit_id), headers, connected)
        except DialFailed as ex:
            link.send_nowait(link.reply(message, CT.RESULT, str(ex).encode(), result_success=boolean(False)))
        return None

    def link_payload(self, link: Channel, message: Message):
        circuit = link.conns.get(message.str_header(Header.CIRCUIT_ID))
        if type(circuit) is not Circuit:
            return None
        source = circuit.dialer if circuit.dialer.channel is link else circuit.host
        return self.circuits.forward(circuit, source, message)

    def link_close(self, link: Channel, message: Message) -> None:
        circuit = link.conns.get(message.str_header(Header.CIRCUIT_ID))
        if isinstance(circuit, Circuit):
            source = circuit.dialer if circuit.dialer.channel is link else circuit.host
            self.circuits.close(circuit, source, message.body.decode("utf-8", "replace") or "closed")
