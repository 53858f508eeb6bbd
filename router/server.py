"""``EdgeRouter``: the TLS listener in its own thread and event loop.

``start`` asks the controller link for the router's certificate and trusted
CAs, listens, reports the router online and returns once it accepts; ``stop``
closes every channel (their terminators go) and reports it offline. Trusted
CAs are live: when the controller's bundle changes, new channels are verified
against the new one (a CA created and verified is trusted at once, a deleted or
disabled one no longer is), and open SDK channels whose certificate chains only
to a CA that left the bundle are closed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures  # noqa: F401  (named in annotations)
import logging
import socket
import ssl
import tempfile
import threading
import types
from pathlib import Path

from router import peer_links as links_tls
from router import tls_transport
from router.channel import Channel, running_in
from router.circuits import CIRCUIT_BUFFER, Circuit, Circuits
from router.controller_link import ControllerLink, Credentials
from router.edge import Edge
from router.faults import EdgeFaults
from router.forwarder import Forwarder
from router.peer_links import Links
from router.tls_policy import bundle_ders, new_context
from router.version import version_info

log = logging.getLogger("router")
#: how long a stop waits for closed channels to clean up (terminators, circuits) before cancelling the rest;
#: within ``python -m router run``'s 5 s stop bound
SHUTDOWN_WAIT = 3.0
#: SDK channels at once from one address (many SDKs may share one address behind a NAT; an idle connection costs
#: no TLS state before its first byte); more are closed as they are accepted
EDGE_MAX_PER_ADDRESS = 4096


def _pem_files(folder: str, chain_pem: str, key_pem: str, stem: str) -> tuple[str, str]:
    chain, key = Path(folder) / f"{stem}.chain.pem", Path(folder) / f"{stem}.key.pem"
    chain.write_text(chain_pem)
    key.touch(mode=0o600)
    key.write_text(key_pem)
    return str(chain), str(key)


def server_context(creds: Credentials, trusted_cas: str) -> ssl.SSLContext:
    """The SDK listener's TLS context: the router's certificate, client certificates from the trusted CAs."""
    context = new_context(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory(prefix="ziti-router-") as folder:
        context.load_cert_chain(*_pem_files(folder, creds.cert_chain_pem, creds.key_pem, "server"))
    context.load_verify_locations(cadata=trusted_cas)
    context.verify_mode = ssl.CERT_REQUIRED
    context.set_alpn_protocols(["ziti-edge"])
    return context


def link_contexts(creds: Credentials) -> tuple[ssl.SSLContext, ssl.SSLContext] | None:
    """The link listener's and dialer's contexts (None without link credentials): the controller CA only."""
    if not (creds.client_cert_chain_pem and creds.client_key_pem and creds.ca_pem):
        return None
    with tempfile.TemporaryDirectory(prefix="ziti-router-") as folder:
        files = _pem_files(folder, creds.cert_chain_pem, creds.key_pem, "server")
        client_files = _pem_files(folder, creds.client_cert_chain_pem, creds.client_key_pem, "client")
        return links_tls.server_context(*files, creds.ca_pem), links_tls.client_context(*client_files, creds.ca_pem)


def _peername(sock: socket.socket) -> tuple:
    try:
        return sock.getpeername()
    except OSError:
        return ("?", 0)  # the peer went already


def _failed(name: str, ex: BaseException) -> None:
    log.error("router: %s failed: %s: %s", name, type(ex).__name__, str(ex).replace("\n", " ") or "-")
    log.debug("router: %s failed", name, exc_info=ex)


@types.coroutine
def _carry_on(coro, waiting):
    """The rest of ``coro``, whose first step yielded ``waiting``: what a task sends or throws goes on to it."""
    while True:
        try:
            sent = yield waiting
        except BaseException as ex:  # noqa: BLE001 - a cancellation (or a close) is the coroutine's to handle
            try:
                waiting = coro.throw(ex)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                waiting = coro.send(sent)
            except StopIteration as stop:
                return stop.value


class EdgeRouter:
    """An edge router SDKs dial and bind through, reaching the controller only via ``link``.

    It owns its parts and they point one way: the router holds the :class:`~router.edge.Edge` (SDK
    messages), the :class:`~router.peer_links.Links` (peer routers) and the :class:`~router.circuits.Circuits`;
    each channel is served with its handler table and knows nothing of the router.
    """

    def __init__(
        self,
        link: ControllerLink,
        host: str = "127.0.0.1",
        port: int = 3022,
        *,
        advertise: str | None = None,
        hello_timeout: float = 10.0,
        dial_timeout: float = 5.0,
        link_port: int | None = 0,
        link_advertise: str | None = None,
        circuit_buffer: int = CIRCUIT_BUFFER,
        stall_timeout: float = 5.0,
        probe_interval: float = 5.0,
        probe_timeout: float = 10.0,
        loop: asyncio.AbstractEventLoop | None = None,
    ):
        """``loop``: a running event loop to serve in (its owner stops it: routers of one process may share one);
        else the one the controller link lends (its control channel's), else one of its own on a thread."""
        self.link, self.host, self.port = link, host, port
        self._lent_loop = loop
        self.advertise = advertise
        self.hello_timeout, self.dial_timeout = hello_timeout, dial_timeout
        self.link_port, self.link_advertise = link_port, link_advertise
        self.probe_interval, self.probe_timeout = probe_interval, probe_timeout
        self.circuits = Circuits(self._circuit_gone, buffer=circuit_buffer, stall_timeout=stall_timeout)
        self.link_channels: dict[str, Channel] = {}
        self.edge: Edge | None = None
        self.links: Links | None = None
        self.forwarder: Forwarder | None = None
        #: faults on this router's edge messages, as the controller sets them (``router/faults.py``)
        self.edge_faults = EdgeFaults(self._report_fault_hits)
        #: work spawned by channels (dials, binds) and the channels' own read tasks
        self.tasks: set[asyncio.Task] = set()
        self.channel_tasks: set[asyncio.Task] = set()
        #: accepted connections still in their TLS handshake (a stop cancels them at once)
        self.handshakes: set[asyncio.Task] = set()
        self.router_id = ""
        self.loop: asyncio.AbstractEventLoop | None = None
        self._server: tls_transport.Listener | None = None
        self._link_server: tls_transport.Listener | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self.error: BaseException | None = None

    @property
    def url(self) -> str:
        return f"tls://{self.advertise or self.host}:{self.port}"

    @property
    def link_url(self) -> str | None:
        if self._link_server is None:
            return None
        return f"tls://{self.link_advertise or self.advertise or self.host}:{self.link_port}"

    @property
    def channels(self) -> set[Channel]:
        return self.edge.channels if self.edge is not None else set()

    # -- lifecycle ------------------------------------------------------------------
    def start(self) -> "EdgeRouter":
        self._creds = creds = Credentials(**self.link.credentials())
        self.router_id = creds.router_id
        context, link_tls = server_context(creds, self.link.trusted_cas()), link_contexts(creds)
        self.edge = Edge(
            self.link,
            self.circuits,
            self.link_channels,
            router_id=self.router_id,
            spawn=self.spawn,
            dial_timeout=self.dial_timeout,
        )
        if link_tls is not None and self.link_port is not None:
            self.forwarder = Forwarder(self.edge, self.circuits, router_id=self.router_id)
            self.links = Links(
                self.link,
                router_id=self.router_id,
                server_context=link_tls[0],
                client_context=link_tls[1],
                handlers=self.forwarder.handlers,
                on_closed=self._link_closed,
                spawn=self.spawn,
                hello_timeout=self.hello_timeout,
                probe_interval=self.probe_interval,
                probe_timeout=self.probe_timeout,
            )
            self.link_channels = self.edge.links = self.links.by_id
        lent = self._lent_loop or getattr(self.link, "loop", None)
        if lent is not None and lent.is_running():  # the control channel's loop: its pushes are handled on arrival
            self.loop = lent
            asyncio.run_coroutine_threadsafe(self._listen_in_loop(context), lent).result(30)
        else:
            self._thread = threading.Thread(target=self._run, args=(context,), name="edge-router", daemon=True)
            self._thread.start()
            self._ready.wait(30)
            if self.error is not None:
                raise self.error
        self.link.watch(self._revoked)
        self.link.watch_trusted_cas(self._trusted_cas_changed)
        self.link.watch_edge_faults(self._edge_faults_changed)
        self.link.watch_peers(self._peer_returned)
        self.link.watch_routes(self._route_pushed)
        self.link.watch_state(self._state, self._reconciled)
        self.link.online(self.url, version_info())
        if self.links is not None:
            self.link.link_listen(self.link_url)
            self.loop.call_soon_threadsafe(self.links.dial_peers)
        log.info("router: listening at %s", self.url)
        return self

    def _listen(self, context: ssl.SSLContext) -> None:
        """Bind the edge (and link) listeners, in the loop's thread; ``OSError`` saying which port to change."""
        self._context = context
        try:
            self._server = tls_transport.listen(
                self.loop, self.host, self.port, self._accept, max_per_address=EDGE_MAX_PER_ADDRESS
            )
            self.port = self._server.sockets[0].getsockname()[1]
            if self.links is not None:
                self._link_server = tls_transport.listen(self.loop, self.host, self.link_port, self._accept_link)
                self.link_port = self._link_server.sockets[0].getsockname()[1]
        except OSError as ex:
            if self._server is not None:
                self._server.close()
            raise OSError(
                ex.errno,
                f"the edge router cannot listen on {self.host}:{self.port}: {ex.strerror}"
                " (choose another --router-port, or --no-router)",
            ) from None

    async def _listen_in_loop(self, context: ssl.SSLContext) -> None:
        self._listen(context)

    def _run(self, context: ssl.SSLContext) -> None:
        self.loop = asyncio.new_event_loop()
        try:
            self._listen(context)
        except BaseException as ex:  # noqa: BLE001 - surfaced by start()
            self.error = ex
            self._ready.set()
            self.loop.close()
            return
        self._ready.set()
        self.loop.run_forever()
        self.loop.close()

    def stop(self) -> None:
        if self.loop is None:
            return
        if self.loop.is_running():
            asyncio.run_coroutine_threadsafe(self._shutdown(), self.loop).result(15)
            if self._thread is not None:  # a lent loop goes on: its owner, the control channel, stops it
                self.loop.call_soon_threadsafe(self.loop.stop)
        if self._thread is not None:
            self._thread.join(15)
        self.link.offline()

    async def _shutdown(self) -> None:
        """Close every channel and link and let each clean up (terminators go), then cancel what is left."""
        if self._server is not None:
            self._server.close()
        if self._link_server is not None:
            self._link_server.close()
        if self.links is not None:
            self.links.close_all()
        for channel in list(self.channels):
            channel.close()
        pending = self.handshakes | (self.links.handshakes if self.links is not None else set())
        for task in list(pending):  # nothing to clean up: a connection still in its TLS handshake just ends
            task.cancel()
        if self.channel_tasks:
            await asyncio.wait(list(self.channel_tasks), timeout=SHUTDOWN_WAIT)
        tasks = list(self.tasks | self.channel_tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def spawn(self, coro, *, now: bool = False) -> None:
        """Run ``coro`` as one of the router's tasks: a stop cancels it, a failure is logged in one line.

        ``now``: its first step runs here, before this returns, and a task carries it on only if it waits (as
        Python 3.12's eager tasks): an SDK's request reaches the controller, and a dial its host, before this loop
        turns instead of behind whatever else the loop holds (a circuit closing, another channel's frames). That
        first step runs outside any task: it must not need one (``asyncio.timeout``) before it first waits."""
        name = coro.__qualname__
        if now:
            try:
                waiting = coro.send(None)
            except (StopIteration, asyncio.CancelledError):
                return
            except Exception as ex:  # noqa: BLE001 - logged as a task's failure is
                return _failed(name, ex)
            coro = _carry_on(coro, waiting)
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self.tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task) -> None:
        """No task dies silently: an unexpected failure is logged in one line (its traceback at debug level)."""
        self.tasks.discard(task)
        if not task.cancelled() and (ex := task.exception()) is not None:
            _failed(task.get_name(), ex)

    # -- channels -------------------------------------------------------------------
    async def _accept(self, sock: socket.socket) -> None:
        task = asyncio.current_task()
        self.channel_tasks.add(task)
        try:
            streams = await self._handshake(sock)
            if streams is not None:
                channel = Channel(*streams)
                del streams  # the channel lets the stream pair go after the hello (Channel._serve_frames)
                edge = self.edge
                self.edge_faults.opened(channel)
                try:
                    await channel.serve(edge.hello, edge.handlers, edge.unknown, self.hello_timeout)
                finally:
                    self.edge_faults.closed(channel)
                    await edge.channel_closed(channel)
        finally:
            self.channel_tasks.discard(task)

    async def _accept_link(self, sock: socket.socket) -> None:
        task = asyncio.current_task()
        self.channel_tasks.add(task)
        try:
            await self.links.accept(sock)
        finally:
            self.channel_tasks.discard(task)

    def _link_closed(self, channel: Channel) -> None:
        if not self.links.stopping:
            log.info("router: link %s to %s closed", channel.link_id, channel.caller)
        self.circuits.channel_gone(channel, "link down")

    async def _handshake(self, sock: socket.socket):
        """TLS here rather than in the listener, so a refused client certificate is logged once; the channel's
        (reader, writer), or None."""
        peer = _peername(sock)
        try:
            return await tls_transport.accept(
                sock, self._context, self.hello_timeout, limit=2**20, pending=self.handshakes
            )
        except OSError as ex:  # ssl.SSLError, ConnectionError, TimeoutError
            reason = getattr(ex, "reason", None) or type(ex).__name__
            log.warning("router: TLS handshake with %s:%s failed (%s), closing", peer[0], peer[1], reason)
            return None

    # -- what the controller tells (from its channel's thread, or from this loop when the channel lives in it) --------
    def _in_loop(self, fn, *args) -> None:
        """``fn(*args)`` in the router's loop: at once when called there, else handed over to it."""
        loop = self.loop
        if loop is None or not loop.is_running():
            return
        if running_in(loop):
            fn(*args)
        else:
            loop.call_soon_threadsafe(fn, *args)

    def _revoked(self, kind: str, revoked_id: str) -> None:
        if kind == "router":
            if self.links is not None and revoked_id != self.router_id:
                self._in_loop(self.links.router_gone, revoked_id)
        else:
            self._in_loop(self.edge.revoke, kind, revoked_id)

    def _peer_returned(self, peer: dict) -> None:
        """A peer router reconnected; dial it again if no link to it is up."""
        if self.links is not None:
            self._in_loop(self.links.peer_returned, peer)

    def _route_pushed(self, route: dict) -> None:
        """A dial entering another router crosses this one (``route`` push)."""
        if self.forwarder is not None:
            self._in_loop(self.forwarder.route_pushed, route)

    def _state(self) -> "concurrent.futures.Future":
        """From a controller thread: this router's whole state, collected in its loop (see ``watch_state``)."""
        return asyncio.run_coroutine_threadsafe(self._collect(), self.loop)

    async def _collect(self) -> dict:
        channels = [channel for channel in self.channels if not channel.closed and channel.token]
        self._reported_channels = channels
        return {
            "terminators": [binding.terminator for binding in self.edge.bindings.values()],
            "links": self.links.state() if self.links is not None else [],
            "channels": [(channel.token, channel.fingerprint()) for channel in channels],
        }

    def _reconciled(self, answer: dict) -> None:
        """Drop what the controller refused at a reconcile."""
        self._in_loop(self._apply_reconcile, answer)

    def _apply_reconcile(self, answer: dict) -> None:
        self.edge.drop_terminators(answer.get("drop_terminators") or ())
        if self.links is not None:
            self.links.drop(answer.get("drop_links") or ())
        reported = getattr(self, "_reported_channels", [])
        for index in answer.get("drop_channels") or ():
            if isinstance(index, int) and 0 <= index < len(reported):
                channel = reported[index]
                log.info("router: %s closed: the controller no longer accepts its api session", channel.id)
                channel.close()
        self._reported_channels = []

    def _edge_faults_changed(self, generation: int, faults: list) -> None:
        """This router's whole set of edge faults."""
        self._in_loop(self.edge_faults.replace, generation, list(faults))

    def _report_fault_hits(self, generation: int, hits: dict[str, int]) -> None:
        self.link.edge_fault_hits(generation, hits)

    def _trusted_cas_changed(self, pem: str) -> None:
        """The next handshakes verify against ``pem``."""
        self._in_loop(self._reload_cas, pem)

    def _reload_cas(self, pem: str) -> None:
        try:
            self._context = server_context(self._creds, pem)
        except (ssl.SSLError, ValueError) as ex:
            log.warning("router: the new trusted CA bundle cannot be loaded (%s), keeping the previous one", ex)
            return
        log.info("router: trusted CAs reloaded")
        self._close_untrusted(bundle_ders(pem))

    def _close_untrusted(self, trusted: frozenset[bytes]) -> None:
        """SDK channels whose certificate no longer chains to a trusted CA close (a CA disabled or deleted)."""
        for channel in list(self.edge.channels):
            issuers = channel.issuers()
            if issuers and not trusted.intersection(issuers):
                who = channel.caller.identity_name if channel.caller else channel.id
                log.warning("router: closing the channel of %s: its certificate's CA is no longer trusted", who)
                channel.close()

    def _circuit_gone(self, circuit: Circuit, reason: str) -> None:
        if circuit.first and circuit.info:
            self.link.circuit_down(
                {
                    "circuit_id": circuit.id,
                    "service_id": circuit.service_id,
                    "bytes_from_dialer": circuit.moved["dialer"],
                    "bytes_from_host": circuit.moved["host"],
                    "reason": reason,
                }
            )

    def stats(self) -> dict:
        """Channels, bindings, circuits and links held right now (read from any thread)."""
        return {
            "channels": len(self.channels),
            "bindings": len(self.edge.bindings) if self.edge else 0,
            "circuits": len(self.circuits.by_id),
            "links": len(self.link_channels),
        }
