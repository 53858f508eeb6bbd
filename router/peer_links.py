"""Links between routers: a mutual-TLS listener, dialing the peers the controller names, link messages.

Trust: both sides present the certificates the controller issued to the router (the listener its server
certificate, the dialer its client certificate) and accept only chains to the controller's own CA (never a
third-party CA). The listener then asks the controller whether the client certificate is the one enrolled
for the router the hello names (``ControllerLink.link_peer``); the dialer checks that the listener's
certificate names the router it meant to reach. Anything else closes that connection with one log line.

A link speaks channel V2 frames (``router/wire.py``) with this project's link content types:

=================  ====================================================================================
Hello (0)          dialer -> listener: ``RouterId`` (8) = dialer's router id, ``LinkId`` (2000) = new id;
                   answered by a Result (success, ``RouterId`` = listener's id) or a refusal and a close
Latency (3)        dialer -> listener every ``probe_interval``; the Result's round trip is the link latency
                   (``ControllerLink.link_latency``); no answer within ``probe_timeout`` closes the link
LinkRoute (1050)   a circuit's route (JSON body: circuit id, service id, terminator id, path, links) with
                   the dialer's Connect headers; answered by a Result (success, ``PublicKey`` = host key)
                   once the host accepted, or a failure whose body is the reason (a route the controller
                   could not push, ``docs/control-channel.md``)
LinkDialed (1051)  on a route the controller pushed, from each router to the one before it: ``CircuitId``,
                   ``ResultSuccess``, ``PublicKey`` = host key once the host (or the next router) accepted;
                   else a failure whose body is the reason; not a reply (it may come before the receiver
                   has the circuit: it is then held, ``router/forwarder.py``)
LinkPayload (1100) circuit data: ``CircuitId`` (1026), ``Flags``, ``Seq``, ``UUID`` and the body
LinkClose (1102)   the circuit ended; the body is the reason its far end is told
LinkPause (1104)   stop sending this circuit's data (the receiver's queue for it is full)
LinkResume (1105)  send again
=================  ====================================================================================

Who dials: a router dials every peer the controller lists when it starts, so the newer router of a pair
dials; a dialer whose link dropped dials again (with backoff) while the controller still lists the peer
and no other link to it is up. A router the controller reports gone loses its links at once. Two routers
that dial each other at once keep one link: the one with the smaller link id, on both sides (a listener
refuses a hello whose id is greater than its live link's; a dialer or listener whose new link has the
smaller id closes the other).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import time
import uuid
from typing import Callable, Mapping
from urllib.parse import urlsplit

from router import tls_transport
from router.channel import Channel, Handler
from router.controller_link import ControllerLink
from router.tls_policy import new_context
from router.wire import ContentType as CT
from router.wire import Header, Message, boolean

log = logging.getLogger("router")
#: how a listener's refusal of a duplicate link begins (the dialer logs it as information, not a warning)
DUPLICATE = "duplicate link"
#: a live link kept over this many duplicates gives way to the next one (as the real router's link registry)
MAX_DUPLICATES = 5


class Links:
    """This router's links, by id; the listener and the dialers."""

    def __init__(
        self,
        link: ControllerLink,
        *,
        router_id: str,
        server_context: ssl.SSLContext,
        client_context: ssl.SSLContext,
        handlers: Mapping[int, Handler],
        on_closed: Callable[[Channel], None],
        spawn,
        hello_timeout: float = 10.0,
        probe_interval: float = 5.0,
        probe_timeout: float = 10.0,
    ):
        self.link, self.router_id = link, router_id
        self.server_context, self.client_context = server_context, client_context
        self.handlers, self.on_closed, self.spawn = handlers, on_closed, spawn
        self.hello_timeout, self.probe_interval, self.probe_timeout = hello_timeout, probe_interval, probe_timeout
        #: link id -> live link channel (``channel.caller`` is the peer router's id)
        self.by_id: dict[str, Channel] = {}
        #: accepted link connections still in their TLS handshake (a stop cancels them at once)
        self.handshakes: set[asyncio.Task] = set()
        self._dialing: set[str] = set()
        #: link id -> how many duplicates it was kept over (``_kept_instead``)
        self._preferred: dict[str, int] = {}
        self.stopping = False

    def to_router(self, router_id: str) -> Channel | None:
        return next((c for c in self.by_id.values() if c.caller == router_id and not c.closed), None)

    # -- the listener side -------------------------------------------------------------
    async def accept(self, sock: socket.socket) -> None:
        try:
            peer = sock.getpeername()
        except OSError:
            peer = ("?", 0)  # the peer went already
        try:
            reader, writer = await tls_transport.accept(
                sock, self.server_context, self.hello_timeout, limit=2**20, pending=self.handshakes
            )
        except OSError as ex:  # ssl.SSLError, ConnectionError, TimeoutError
            reason = getattr(ex, "reason", None) or type(ex).__name__
            log.warning("router: link TLS handshake with %s:%s failed (%s), closing", peer[0], peer[1], reason)
            return
        channel = Channel(reader, writer, "link")
        await self._serve(channel, self._hello_in)

    async def _hello_in(self, channel: Channel, hello: Message) -> bool:
        peer_id, link_id = hello.str_header(Header.ROUTER_ID) or "", hello.str_header(Header.LINK_ID) or ""
        try:
            if not link_id or link_id in self.by_id:
                raise PermissionError("no link id, or one already in use")
            await asyncio.to_thread(self.link.link_peer, peer_id, channel.fingerprint())
        except PermissionError as ex:
            log.warning("router: link from %s refused: %s, closing", channel.peer, ex)
            channel.send_nowait(channel.reply(hello, CT.RESULT, str(ex).encode(), result_success=boolean(False)))
            return False
        kept = self._kept_instead(peer_id, link_id)
        if kept is not None:  # both routers dialed each other: the link with the smaller id stays, on both sides
            log.info("router: link %s from %s refused: duplicate of link %s", link_id, peer_id, kept.link_id)
            reason = f"{DUPLICATE}: link {kept.link_id} to router {self.router_id} is up"
            channel.send_nowait(channel.reply(hello, CT.RESULT, reason.encode(), result_success=boolean(False)))
            return False
        channel.send_nowait(
            channel.reply(hello, CT.RESULT, result_success=boolean(True), router_id=self.router_id.encode())
        )
        self._opened(channel, link_id, peer_id)
        return True

    # -- the dialer side -----------------------------------------------------------------
    def dial_peers(self) -> None:
        """Dial every peer the controller lists that has no link from or to this router yet (quick, loop thread)."""
        self.spawn(self._dial_peers())

    async def _dial_peers(self) -> None:
        try:
            peers = await asyncio.to_thread(self.link.peers)
        except Exception as ex:  # noqa: BLE001 - the controller may be going: try again later
            log.warning("router: cannot list link peers: %s", ex)
            return
        for peer in peers:
            if peer["router_id"] != self.router_id and self.to_router(peer["router_id"]) is None:
                self.spawn(self.keep(peer))

    def peer_returned(self, peer: Mapping) -> None:
        """The controller says ``peer``'s link listener is back (it reconnected): dial it unless a link is up."""
        if peer["router_id"] != self.router_id and not self.stopping and self.to_router(peer["router_id"]) is None:
            self.spawn(self.keep(peer))

    async def keep(self, peer: Mapping) -> None:
        """Hold a link to ``peer``: dial, serve, and dial again (with backoff) while the controller lists it.

        While the controller cannot be asked (its control channel is down) the last known address is dialed
        again with backoff; nothing here ends the task but a stop or the controller no longer listing the peer.
        """
        router_id = peer["router_id"]
        if router_id in self._dialing:
            return
        self._dialing.add(router_id)
        backoff = 0.25
        try:
            while not self.stopping:
                if self.to_router(router_id) is None:
                    served = await self._dial(peer)
                    backoff = 0.25 if served else min(backoff * 2, 5.0)
                if self.stopping:
                    return
                await asyncio.sleep(backoff)
                try:
                    peers = await asyncio.to_thread(self.link.peers)
                except Exception as ex:  # noqa: BLE001 - the controller is away: keep dialing what it said last
                    log.info(
                        "router: cannot ask the controller about link peer %s (%s), dialing it again", router_id, ex
                    )
                    backoff = min(backoff * 2, 5.0)
                    continue
                peer = next((p for p in peers if p["router_id"] == router_id), None)
                if peer is None:
                    return
        finally:
            self._dialing.discard(router_id)

    async def _dial(self, peer: Mapping) -> bool:
        router_id, url = peer["router_id"], peer["url"]
        parts = urlsplit(url)
        try:
            async with asyncio.timeout(self.hello_timeout):
                reader, writer = await tls_transport.connect(
                    parts.hostname, parts.port, self.client_context, server_hostname=parts.hostname, limit=2**20
                )
        except (OSError, ssl.SSLError, asyncio.TimeoutError) as ex:
            log.warning("router: cannot dial a link to %s at %s: %s", router_id, url, ex)
            return False
        channel = Channel(reader, writer, "link")
        if _common_name(writer) != router_id:
            log.warning("router: link peer at %s is not router %s, closing", url, router_id)
            channel.close()
            return False
        link_id = uuid.uuid4().hex
        hello = Message(CT.HELLO, b"", {Header.ROUTER_ID: self.router_id.encode(), Header.LINK_ID: link_id.encode()})
        try:
            reply = await asyncio.wait_for(channel.request_first(hello), self.hello_timeout)
        except (OSError, ssl.SSLError, asyncio.TimeoutError, asyncio.IncompleteReadError) as ex:
            log.warning("router: link hello to %s failed: %s", router_id, ex or type(ex).__name__)
            channel.close()
            return False
        if not reply.bool_header(Header.RESULT_SUCCESS):
            reason = reply.body.decode("utf-8", "replace")
            (log.info if reason.startswith(DUPLICATE) else log.warning)(
                "router: link to %s refused: %s", router_id, reason
            )
            channel.close()
            return False
        kept = self._kept_instead(router_id, link_id)
        if kept is not None:  # the peer dialed this router meanwhile, with the smaller link id: that one stays
            log.info("router: link %s to %s closed: duplicate of link %s", link_id, router_id, kept.link_id)
            channel.close()
            return True
        self._opened(channel, link_id, router_id)
        channel.dialed = True
        try:
            await asyncio.to_thread(self.link.link_up, link_id, router_id)
        except Exception as ex:  # noqa: BLE001 - the link works; the controller just does not know it yet
            log.warning("router: cannot report link %s: %s", link_id, ex)
        probe = asyncio.get_running_loop().create_task(self._probe(channel, link_id))
        try:
            await self._serve(channel, None)
        finally:
            probe.cancel()
        return True

    async def _probe(self, channel: Channel, link_id: str) -> None:
        """Latency probes; a peer that stops answering loses the link."""
        while not channel.closed:
            started = time.perf_counter_ns()
            probe = Message(CT.LATENCY, b"", {Header.REFLECTED: started.to_bytes(8, "little")})
            try:
                await channel.request(probe, self.probe_timeout)
            except asyncio.TimeoutError:
                log.warning("router: link %s to %s stopped answering, closing", link_id, channel.caller)
                channel.close()
                return
            except Exception:  # noqa: BLE001 - the link closed meanwhile
                return
            try:
                await asyncio.to_thread(self.link.link_latency, link_id, time.perf_counter_ns() - started)
            except Exception:  # noqa: BLE001 - a report lost is no reason to drop a working link
                pass
            await asyncio.sleep(self.probe_interval)

    # -- both sides ------------------------------------------------------------------------
    def _kept_instead(self, peer_id: str, link_id: str) -> Channel | None:
        """One link per pair of routers: when both dialed each other at once, the link with the smaller id stays
        (each side compares the same two ids, so both keep the same one, as the real router's link registry does).
        The live link to ``peer_id`` that stays instead of ``link_id``, else None (and a live one with a greater id
        is closed now: ``link_id`` replaces it). A link kept over ``MAX_DUPLICATES`` newer ones gives way to the
        next: the peer keeps dialing, so its end of that link is gone (a dead connection this side has not noticed)."""
        existing = self.to_router(peer_id)
        if existing is None or existing.link_id == link_id:
            return None
        if existing.link_id < link_id and self._preferred.get(existing.link_id, 0) < MAX_DUPLICATES:
            self._preferred[existing.link_id] = self._preferred.get(existing.link_id, 0) + 1
            return existing
        log.info("router: link %s to %s closed: duplicate of link %s", existing.link_id, peer_id, link_id)
        existing.close()
        return None

    def _opened(self, channel: Channel, link_id: str, peer_id: str) -> None:
        channel.caller, channel.link_id = peer_id, link_id
        self.by_id[link_id] = channel
        log.info("router: link %s to %s up", link_id, peer_id)

    async def _serve(self, channel: Channel, hello) -> None:
        try:
            if hello is None:
                await channel.serve_after_hello(self.handlers, self._unknown)
            else:
                await channel.serve(hello, self.handlers, self._unknown, self.hello_timeout)
        finally:
            link_id = getattr(channel, "link_id", None)
            if link_id is not None and self.by_id.get(link_id) is channel:
                del self.by_id[link_id]
                self._preferred.pop(link_id, None)
                self.on_closed(channel)
                try:
                    await asyncio.to_thread(self.link.link_down, link_id)
                except Exception:  # noqa: BLE001 - the controller forgets links of routers that go anyway
                    pass

    def _unknown(self, channel: Channel, message: Message) -> None:
        log.warning("router: link %s sent unknown content type %d, closing", channel.id, message.content_type)
        channel.close()

    def router_gone(self, router_id: str) -> None:
        """The controller says ``router_id`` went: its links close now (no waiting for TCP to notice)."""
        for channel in list(self.by_id.values()):
            if channel.caller == router_id:
                log.info("router: link %s closed, router %s went offline", channel.link_id, router_id)
                channel.close()

    def state(self) -> list[dict]:
        """The live links, for a reconcile: ``{"link_id", "router_id" (the peer), "dialed"}``."""
        return [
            {"link_id": link_id, "router_id": channel.caller, "dialed": channel.dialed}
            for link_id, channel in self.by_id.items()
            if not channel.closed
        ]

    def drop(self, link_ids) -> None:
        """The controller refused these links at a reconcile (the peer is no enrolled, enabled router)."""
        for link_id in link_ids:
            channel = self.by_id.get(link_id)
            if channel is not None:
                log.info("router: link %s to %s closed: the controller refused it", link_id, channel.caller)
                channel.close()

    def close_all(self) -> None:
        self.stopping = True
        for channel in list(self.by_id.values()):
            channel.close()


def _common_name(writer: asyncio.StreamWriter) -> str:
    cert = writer.get_extra_info("peercert") or {}
    for rdn in cert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return value
    return ""


def client_context(cert_chain: str, key: str, ca_pem: str) -> ssl.SSLContext:
    """The dialing side: present the router's client certificate, trust only the controller CA."""
    context = new_context(ssl.PROTOCOL_TLS_CLIENT)
    context.load_cert_chain(cert_chain, key)
    context.load_verify_locations(cadata=ca_pem)
    return context


def server_context(cert_chain: str, key: str, ca_pem: str) -> ssl.SSLContext:
    """The listening side: the router's server certificate; client certificates must chain to the controller CA."""
    context = new_context(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_chain, key)
    context.load_verify_locations(cadata=ca_pem)
    context.verify_mode = ssl.CERT_REQUIRED
    return context
