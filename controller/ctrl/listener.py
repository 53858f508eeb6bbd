"""``CtrlListener``: the control channel's TLS listener, in its own thread and event loop.

Constructing binds the port (a busy port raises ``OSError`` there, as every listener of
``controller.server.lifecycle``); ``start()`` serves and returns once accepting; ``stop()`` closes
every router's connection (each goes offline) and is idempotent.

APPSEC(ctrl-auth): a router proves itself with the client certificate it enrolled: the chain must
verify against the controller's own CAs (never a third-party CA) and the leaf's fingerprint must be
the one recorded for an enabled edge router. Anything else is refused in the handshake, with one
log line.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import socket
import ssl
import tempfile
import threading
from pathlib import Path
from typing import Callable

from cryptography.hazmat.primitives import serialization

from controller.ctrl.session import RouterSession

log = logging.getLogger("controller.ctrl")
#: connections at once from one address (as the HTTPS listener); more are closed at accept
MAX_PER_ADDRESS = 512
#: the largest control frame plus its length (a router's reads)
READ_LIMIT = 2**16


def server_context(pki, ciphers: str) -> ssl.SSLContext:
    """The controller's server certificate; client certificates required, from the controller's CAs only.

    APPSEC(tls-policy): ``ciphers`` is the TLS 1.2 suite list of every other port (the composition root passes
    ``controller.server.tls.TLS12_CIPHERS``: ECDHE with AEAD suites only); TLS 1.3 as OpenSSL offers it.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(ciphers)
    key_pem = pki.server_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    with tempfile.TemporaryDirectory(prefix="ziti-ctrl-") as folder:
        chain, key = Path(folder) / "chain.pem", Path(folder) / "key.pem"
        chain.write_text(pki.server_chain_pem())
        key.touch(mode=0o600)
        key.write_bytes(key_pem)
        context.load_cert_chain(chain, key)
    context.load_verify_locations(cadata=pki.ca_bundle_pem())
    context.verify_mode = ssl.CERT_REQUIRED
    context.set_alpn_protocols(["ziti-ctrl"])
    return context


class CtrlListener:
    """Routers' control channels on ``host:port``; ``link_for(router)`` gives each its ``RouterLink``."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        pki,
        find_router: Callable[[str], dict | None],
        link_for: Callable[[dict], object],
        advertise: str | None = None,
        heartbeat_seconds: float = 1.0,
        heartbeat_timeout: float = 3.0,
        hello_timeout: float = 10.0,
        max_per_address: int = MAX_PER_ADDRESS,
        ciphers: str,
    ):
        self.host, self.pki, self.find_router, self.link_for = host, pki, find_router, link_for
        self.heartbeat_seconds, self.heartbeat_timeout, self.hello_timeout = (
            heartbeat_seconds,
            heartbeat_timeout,
            hello_timeout,
        )
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.max_per_address = max_per_address
        #: open connections by peer address (the cap above)
        self.per_address: dict[str, int] = {}
        self._sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._sock.bind((host, port))
            self._sock.listen(128)
            self._sock.setblocking(False)
        except OSError:
            self._sock.close()
            raise
        self.port = self._sock.getsockname()[1]
        self.advertise = advertise or ("127.0.0.1" if host in ("0.0.0.0", "::") else host)
        #: the current session of each connected router, by router id
        self.sessions: dict[str, RouterSession] = {}
        self._lock = threading.Lock()
        self._context = server_context(pki, ciphers)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._accepting = False
        #: connections before their session (a stop cancels them at once)
        self._handshaking: set[asyncio.Task] = set()
        self._thread: threading.Thread | None = None
        self._tasks: set[asyncio.Task] = set()
        self._ready = threading.Event()

    @property
    def address(self) -> str:
        """``tls:host:port``, as the real controller's ctrl address."""
        return f"tls:{self.advertise}:{self.port}"

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> "CtrlListener":
        self._thread = threading.Thread(target=self._run, name="ctrl-listener", daemon=True)
        self._thread.start()
        self._ready.wait(30)
        log.info("ctrl: listening at %s", self.address)
        return self

    def _run(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.loop.add_reader(self._sock.fileno(), self._accept_ready)
        self._accepting = True
        self._ready.set()
        self.loop.run_forever()
        self.loop.close()

    def _accept_ready(self) -> None:
        """Accept what is waiting; each connection is its own task. Over the per-address cap: closed at once."""
        for _ in range(128):
            try:
                sock, peer = self._sock.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return
            except OSError as ex:  # out of descriptors: pause accepting a moment, as the other listeners
                log.warning("ctrl: cannot accept (%s), pausing 1 s", ex.strerror)
                self.loop.remove_reader(self._sock.fileno())
                self.loop.call_later(1.0, self._resume_accepting)
                return
            address = peer[0] if isinstance(peer, tuple) else str(peer)
            if self.per_address.get(address, 0) >= self.max_per_address:
                log.warning("ctrl: %s has %d connections open already, closing", address, self.max_per_address)
                sock.close()
                continue
            self.per_address[address] = self.per_address.get(address, 0) + 1
            sock.setblocking(False)
            # a request's reply must not wait for the ACK of the one before (Nagle: 40 ms with delayed ACKs);
            # asyncio sets this only on sockets whose proto is IPPROTO_TCP, and accepted ones say 0
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            task = self.loop.create_task(self._accept(sock, peer))
            self._tasks.add(task)
            task.add_done_callback(lambda done, a=address: self._gone(done, a))

    def _resume_accepting(self) -> None:
        if self._accepting:
            self.loop.add_reader(self._sock.fileno(), self._accept_ready)

    def _gone(self, task: asyncio.Task, address: str) -> None:
        self._tasks.discard(task)
        left = self.per_address.get(address, 1) - 1
        if left > 0:
            self.per_address[address] = left
        else:
            self.per_address.pop(address, None)

    def stop(self) -> None:
        if self.loop is None or not self.loop.is_running():
            self._sock.close()
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    async def _shutdown(self) -> None:
        self._accepting = False
        self.loop.remove_reader(self._sock.fileno())
        self._sock.close()
        with self._lock:
            sessions = list(self.sessions.values())
        for session in sessions:
            session.close(abort=True)
        for task in list(self._handshaking):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)

    # -- connections ----------------------------------------------------------------------
    async def _accept(self, sock: socket.socket, peer) -> None:
        """Nothing is allocated for TLS before the router's first byte (an idle connection costs a socket and this
        task, closed after ``hello_timeout``); then the handshake, the router's certificate, its session."""
        task = asyncio.current_task()
        self._handshaking.add(task)
        try:
            streams = await self._handshake(sock, peer)
        finally:
            self._handshaking.discard(task)
        if streams is not None:
            reader, writer, router = streams
            await RouterSession(self, reader, writer, router, self.link_for(router)).serve()

    async def _readable(self, sock: socket.socket) -> None:
        ready = self.loop.create_future()
        self.loop.add_reader(sock.fileno(), lambda: ready.done() or ready.set_result(None))
        try:
            await asyncio.wait_for(ready, self.hello_timeout)
        finally:
            self.loop.remove_reader(sock.fileno())

    async def _handshake(self, sock: socket.socket, peer) -> tuple | None:
        peer = peer if isinstance(peer, tuple) else ("?", 0)
        started = self.loop.time()
        writer = None
        try:
            await self._readable(sock)
            if not sock.recv(1, socket.MSG_PEEK):  # closed without a byte: no TLS state for it either
                sock.close()
                return None
            reader = asyncio.StreamReader(limit=READ_LIMIT, loop=self.loop)
            protocol = asyncio.StreamReaderProtocol(reader, loop=self.loop)
            left = max(0.1, self.hello_timeout - (self.loop.time() - started))
            transport, _ = await self.loop.connect_accepted_socket(
                lambda: protocol, sock, ssl=self._context, ssl_handshake_timeout=left
            )
            writer = asyncio.StreamWriter(transport, protocol, reader, self.loop)
        except (ssl.SSLError, ConnectionError, asyncio.TimeoutError, OSError) as ex:
            reason = getattr(ex, "reason", None) or type(ex).__name__
            log.warning("ctrl: TLS handshake with %s:%s failed (%s), closing", peer[0], peer[1], reason)
            sock.close()  # the transport closed it already if there was one
            return None
        except asyncio.CancelledError:
            sock.close()
            raise
        leaf = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        fingerprint = hashlib.sha1(leaf).hexdigest()
        router = await asyncio.to_thread(self.find_router, fingerprint)
        problem = (
            "no enrolled router has its certificate"
            if router is None
            else "it is not an edge router"
            if not router.get("is_edge")
            else "the router is disabled"
            if router.get("disabled")
            else None
        )
        if problem:
            log.warning("ctrl: %s:%s refused: %s, closing", peer[0], peer[1], problem)
            writer.transport.abort()
            return None
        return reader, writer, router

    def adopt(self, session: RouterSession) -> None:
        """``session`` is now its router's connection; an older one of the same router is closed."""
        with self._lock:
            previous = self.sessions.get(session.router_id)
            self.sessions[session.router_id] = session
        if previous is not None and previous is not session:
            log.info("ctrl: %s reconnected, closing its previous connection", session.label)
            previous.close(abort=True)

    def release(self, session: RouterSession) -> bool:
        """Forget ``session``; True when it was its router's current connection."""
        with self._lock:
            if self.sessions.get(session.router_id) is session:
                del self.sessions[session.router_id]
                return True
        return False

    def connected(self) -> list[str]:
        with self._lock:
            return list(self.sessions)
