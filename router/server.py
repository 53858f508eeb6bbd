"""``EdgeRouter``: the TLS listener in its own thread and event loop.

``start`` asks the controller link for the router's certificate and trusted
CAs, listens, reports the router online and returns once it accepts; ``stop``
closes every channel (their terminators go) and reports it offline. Trusted
CAs are live: when the controller's bundle changes, new channels are verified
against the new one (a CA created and verified is trusted at once, a deleted or
disabled one no longer is).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import tempfile
import threading
from pathlib import Path

from router.channel import Channel
from router.edge import Edge
from router.link import ControllerLink, Credentials

log = logging.getLogger("router")

#: APPSEC(tls-policy): Mozilla "intermediate" without DHE, as the controller's HTTPS listener
#: (``controller.server.tls.TLS12_CIPHERS``; the router never imports the controller, a test keeps them equal)
TLS12_CIPHERS = (
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
)


def server_context(creds: Credentials, trusted_cas: str) -> ssl.SSLContext:
    """TLS server context with the router cert, requiring client certs from the trusted CAs."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(TLS12_CIPHERS)
    with tempfile.TemporaryDirectory(prefix="ziti-router-") as folder:
        chain, key = Path(folder) / "chain.pem", Path(folder) / "key.pem"
        chain.write_text(creds.cert_chain_pem)
        key.touch(mode=0o600)
        key.write_text(creds.key_pem)
        context.load_cert_chain(chain, key)
    context.load_verify_locations(cadata=trusted_cas)
    context.verify_mode = ssl.CERT_REQUIRED
    context.set_alpn_protocols(["ziti-edge"])
    return context


#: TLS read buffer per channel: asyncio allocates 256 KiB per connection; a TLS record is at most 16 KiB
READ_BUFFER = 32 * 1024


def _shrink_read_buffer(writer: asyncio.StreamWriter) -> None:
    """Hold 1,000 idle channels in tens of MiB rather than hundreds (asyncio internals, if present)."""
    protocol = getattr(writer.transport, "_ssl_protocol", None)
    if protocol is not None and hasattr(protocol, "_ssl_buffer"):
        protocol.max_size = READ_BUFFER
        protocol._ssl_buffer = bytearray(READ_BUFFER)
        protocol._ssl_buffer_view = memoryview(protocol._ssl_buffer)


class EdgeRouter:
    """An edge router SDKs dial and bind through, reaching the controller only via ``link``."""

    def __init__(
        self,
        link: ControllerLink,
        host: str = "127.0.0.1",
        port: int = 3022,
        *,
        advertise: str | None = None,
        hello_timeout: float = 10.0,
        dial_timeout: float = 5.0,
    ):
        self.link, self.host, self.port = link, host, port
        self.advertise = advertise
        self.hello_timeout, self.dial_timeout = hello_timeout, dial_timeout
        self.edge = Edge(self)
        self.channels: set[Channel] = set()
        #: work spawned by channels (dials, binds) and the channels' own read tasks
        self.tasks: set[asyncio.Task] = set()
        self.channel_tasks: set[asyncio.Task] = set()
        self.router_id = ""
        self.loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self.error: BaseException | None = None

    @property
    def url(self) -> str:
        return f"tls://{self.advertise or self.host}:{self.port}"

    # -- lifecycle ------------------------------------------------------------------
    def start(self) -> "EdgeRouter":
        self._creds = Credentials(**self.link.credentials())
        self.router_id = self._creds.router_id
        context = server_context(self._creds, self.link.trusted_cas())
        self._thread = threading.Thread(target=self._run, args=(context,), name="edge-router", daemon=True)
        self._thread.start()
        self._ready.wait(30)
        if self.error is not None:
            raise self.error
        self.link.watch(self._revoked)
        self.link.watch_trusted_cas(self._trusted_cas_changed)
        self.link.online(self.url)
        log.info("router: listening at %s", self.url)
        return self

    def _run(self, context: ssl.SSLContext) -> None:
        self.loop = asyncio.new_event_loop()
        try:
            self._context = context
            self._server = self.loop.run_until_complete(
                asyncio.start_server(self._accept, self.host, self.port, limit=2**20)
            )
            self.port = self._server.sockets[0].getsockname()[1]
        except OSError as ex:
            self.error = OSError(
                ex.errno,
                f"the edge router cannot listen on {self.host}:{self.port}: {ex.strerror}"
                " (choose another --router-port, or --no-router)",
            )
            self._ready.set()
            self.loop.close()
            return
        except BaseException as ex:  # noqa: BLE001 - surfaced by start()
            self.error = ex
            self._ready.set()
            self.loop.close()
            return
        self._ready.set()
        self.loop.run_forever()
        self.loop.close()

    def stop(self) -> None:
        if self.loop is None or self._thread is None:
            return
        if self.loop.is_running():
            asyncio.run_coroutine_threadsafe(self._shutdown(), self.loop).result(15)
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(15)
        self.link.offline()

    async def _shutdown(self) -> None:
        """Close every channel and let each clean up (terminators go), then cancel what is left."""
        self._server.close()
        for channel in list(self.channels):
            channel.close()
        if self.channel_tasks:
            await asyncio.wait(list(self.channel_tasks), timeout=10)
        tasks = list(self.tasks | self.channel_tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- channels -------------------------------------------------------------------
    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self.channel_tasks.add(task)
        try:
            if await self._handshake(writer):
                await Channel(self, reader, writer).serve()
        finally:
            self.channel_tasks.discard(task)

    async def _handshake(self, writer: asyncio.StreamWriter) -> bool:
        """TLS here rather than in the listener, so a refused client certificate is logged once."""
        peer = writer.get_extra_info("peername") or ("?", 0)
        try:
            await writer.start_tls(self._context, ssl_handshake_timeout=self.hello_timeout)
            _shrink_read_buffer(writer)
            return True
        except (ssl.SSLError, ConnectionError, asyncio.TimeoutError) as ex:
            reason = getattr(ex, "reason", None) or type(ex).__name__
            log.warning("router: TLS handshake with %s:%s failed (%s), closing", peer[0], peer[1], reason)
            writer.close()
            return False

    def _revoked(self, kind: str, revoked_id: str) -> None:
        """Called from a controller thread: hand over to the loop."""
        if self.loop is not None and self.loop.is_running():
            self.loop.call_soon_threadsafe(self.edge.revoke, kind, revoked_id)

    def _trusted_cas_changed(self, pem: str) -> None:
        """Called from a controller thread: the next handshakes verify against ``pem``."""
        if self.loop is not None and self.loop.is_running():
            self.loop.call_soon_threadsafe(self._reload_cas, pem)

    def _reload_cas(self, pem: str) -> None:
        try:
            self._context = server_context(self._creds, pem)
        except (ssl.SSLError, ValueError) as ex:
            log.warning("router: the new trusted CA bundle cannot be loaded (%s), keeping the previous one", ex)
            return
        log.info("router: trusted CAs reloaded")

    def channel_opened(self, channel: Channel) -> None:
        self.channels.add(channel)
        self.link.connection_changed(channel.caller.identity_id, True)

    def channel_gone(self, channel: Channel) -> None:
        if channel in self.channels:
            self.channels.discard(channel)
            self.link.connection_changed(channel.caller.identity_id, False)

    def stats(self) -> dict:
        """Channels, bindings and circuits held right now (read from any thread)."""
        return {
            "channels": len(self.channels),
            "bindings": len(self.edge.bindings),
            "circuits": len(self.edge.circuits),
        }
