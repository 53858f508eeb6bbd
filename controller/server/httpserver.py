"""HTTP/1.1 server: one event loop does all socket I/O, a thread pool runs the WSGI app.

Why not a thread per connection (waitress, cheroot): a client that connects and
sends nothing, or trickles bytes, must not hold a worker. Here a connection costs
the loop a few objects until its request is complete; only then does a worker
run the app. Deadlines (``Limits``) bound every phase a client controls:

* ``handshake``: TLS handshake finished within this many seconds of connecting;
* ``request``: the whole request (head and body) arrives within this many seconds
  of its first byte, or of connecting for a connection's first request;
* ``idle``: a keep-alive connection with no new request is closed after this.

Connections are capped twice: ``max_connections`` in all, and ``max_per_peer``
per client address, so one address holding thousands of idle connections
cannot fill the global cap and lock everyone else out. The server accepts
sockets itself (not ``loop.create_server``) so an over-cap one is reset right
after ``accept()``, before asyncio builds a task, a transport and a protocol
for it: a flood costs the loop a few microseconds per refused connection.

Requests are parsed by httptools (llhttp, Node's C parser) in
``http_connection``; responses are framed in ``wsgi_bridge``. TLS, when ``tls``
is given, is a layer over memory buffers (``controller.server.tls.TLSLayer``), so the
handshake never blocks the loop.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import queue
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from controller.server.http_connection import Connection
from controller.server.memory import HeapTrimmer
from controller.server.wsgi_bridge import run_app

log = logging.getLogger("controller.server.serve")

#: ``accept()`` errors that mean this process is out of descriptors or memory: stop accepting for a moment
_OUT_OF_RESOURCES = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
_ACCEPTS_PER_WAKEUP = 256  # the loop serves others between batches
_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends a reset, nothing lingers


@dataclass(frozen=True)
class Limits:
    """Deadlines (seconds) and sizes a client cannot exceed."""

    handshake: float = 10.0
    request: float = 10.0
    idle: float = 30.0
    #: bodies are read before the app runs; past this the app sees this much and the connection closes
    max_body: int = 2 * 1024 * 1024
    max_head: int = 64 * 1024
    #: 20,000: a fleet of 10,000 SDKs with room for as many again (each is one keep-alive connection)
    max_connections: int = 20_000
    #: connections one client address may hold at once; more are reset as they arrive (``HTTPServer._refuse``)
    max_per_peer: int = 512
    #: (exact path, limit) pairs allowed a larger body than ``max_body``, e.g. the import extension's
    large_bodies: tuple[tuple[str, int], ...] = ()
    #: connections reading or holding such a body at once; the others get ``max_body``
    large_bodies_at_once: int = 2
    #: headers -> whether this request may send a large body at all (the controller: an admin's session);
    #: the app still authorizes the request, this only decides what is buffered before it runs
    large_body_gate: Callable[[list[tuple[bytes, bytes]]], bool] | None = None

    def max_body_for(self, target: bytes) -> int:
        """The body limit of a request for ``target`` (its path; the query is ignored)."""
        path = target.split(b"?", 1)[0].decode("latin-1")
        return next((limit for large, limit in self.large_bodies if large == path), self.max_body)


class HTTPServer:
    """An HTTP (or, with ``tls``, HTTPS) server for a WSGI app.

    Construction binds the port (so a busy port fails here, before anything
    serves); ``start`` serves from a daemon thread; ``stop`` closes the listener
    and every connection and returns within about two seconds. ``error`` holds an
    exception from the serving thread, re-raised by ``stop``. ``tls`` makes one
    TLS layer per connection (see ``controller.server.tls.TLSServer``).
    """

    scheme = "http"

    def __init__(
        self,
        app,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        threads: int = 8,
        limits: Limits | None = None,
        tls: Callable[[], object] | None = None,
    ):
        self.app = app
        self.limits = limits or Limits()
        self.tls = tls  # a factory of one TLS layer per connection
        self.host = host
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._sock = socket.create_server((host, port), family=family, backlog=1024)
        self.port = self._sock.getsockname()[1]
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._outbox: deque = deque()  # (callback, args) posted by workers for the loop
        self._wake_pending = False
        self.workers = [
            threading.Thread(target=self._work, name=f"http-{self.port}-{n}", daemon=True) for n in range(threads)
        ]
        self.loop: asyncio.AbstractEventLoop | None = None
        self.connections: set = set()
        self.accepted = 0  # sockets accepted and not yet closed (being adopted, or in ``connections``)
        self.per_peer: dict[str, int] = {}  # of ``accepted``, each client address's
        self.capped_peers: set[str] = set()  # addresses told about in the log, until they drop under the cap
        self._adopting: set[socket.socket] = set()  # accepted, not yet a Connection (closed by a stop meanwhile)
        self.large_readers: set = set()  # connections granted a body past max_body (Limits.large_bodies)
        self._tick_seconds = self._tick
        self._slots: dict[int, set] = {}  # sweep number -> connections whose deadline passes before it (``watch``)
        self.trimmer = HeapTrimmer()  # gives memory back after many clients left (``controller.server.memory``)
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    def start(self) -> HTTPServer:
        """Serve from a daemon thread; returns once the listener accepts connections."""
        self._thread = threading.Thread(target=self._serve, name=f"http-loop-{self.port}", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self.error is not None:
            raise self.error
        return self

    def _work(self) -> None:
        """A worker: run the app for each job until told to stop (a plain queue: no futures)."""
        while (job := self.jobs.get()) is not None:
            run_app(self.app, *job)
            del job  # not held while waiting for the next one: it refers to its connection, environ and body

    def post(self, callback: Callable, *args) -> None:
        """From a worker: run ``callback(*args)`` on the loop, in order.

        Answers finishing together share one wake-up of the loop (one self-pipe
        write and one read, not one each). Raises RuntimeError once the loop is closed.
        """
        self._outbox.append((callback, args))
        if not self._wake_pending:
            self._wake_pending = True
            self.loop.call_soon_threadsafe(self._run_posted)

    def _run_posted(self) -> None:
        # NOTE: the flag drops before the outbox is read, so a post racing this drain
        # is either seen here or schedules its own drain: none is left waiting.
        self._wake_pending = False
        outbox = self._outbox
        while outbox:
            callback, args = outbox.popleft()
            callback(*args)

    def _serve(self) -> None:
        self.loop = asyncio.new_event_loop()
        try:
            self._sock.setblocking(False)
            self.loop.add_reader(self._sock.fileno(), self._accept)
            for worker in self.workers:
                worker.start()
            self.loop.call_later(self._tick, self._sweep)
            self._ready.set()
            self.loop.run_forever()
        except BaseException as ex:  # noqa: BLE001 - surfaced through .error and stop()
            self.error = ex
            self._ready.set()
        finally:
            self.loop.close()

    # -- accepting -------------------------------------------------------------------
    def _accept(self) -> None:
        """Accept what is waiting (a batch): admit each socket, or reset it at once past a cap."""
        limits = self.limits
        for _ in range(_ACCEPTS_PER_WAKEUP):
            try:
                sock, address = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as ex:
                if ex.errno in _OUT_OF_RESOURCES:  # retry in a second rather than spin on a full table
                    log.warning("cannot accept connections for now: %s", ex.strerror)
                    self.loop.remove_reader(self._sock.fileno())
                    self.loop.call_later(1.0, self._resume_accepting)
                return  # anything else (a client gone before its accept) concerns that client only
            host = str(address[0]) if address else ""
            held = self.per_peer.get(host, 0)
            if self.accepted >= limits.max_connections or held >= limits.max_per_peer:
                self._refuse(sock, host, held)
                continue
            self.accepted += 1
            self.trimmer.opened(self.accepted)
            self.per_peer[host] = held + 1
            sock.setblocking(False)
            self._adopting.add(sock)
            self.loop.create_task(self._adopt(sock, host))

    def _resume_accepting(self) -> None:
        if self._sock.fileno() != -1 and not self.loop.is_closed():
            self.loop.add_reader(self._sock.fileno(), self._accept)

    def _refuse(self, sock: socket.socket, host: str, held: int) -> None:
        """APPSEC(fair-connections): reset an over-cap connection before a byte is read or a handshake begins.

        A reset rather than a 503: the request has not arrived yet (answering it means holding the
        very slot being refused until it does), and on the HTTPS port a 503 would first cost a
        handshake. Clients see a refused connection at once and may retry.
        """
        if held >= self.limits.max_per_peer and host not in self.capped_peers:
            self.capped_peers.add(host)
            log.warning(
                "connections: %s holds %d connections (the per-address cap); closing its new ones at once", host, held
            )
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
        except OSError:
            pass
        sock.close()

    async def _adopt(self, sock: socket.socket, host: str) -> None:
        try:
            await self.loop.connect_accepted_socket(lambda: Connection(self, host), sock)
        except Exception as ex:  # noqa: BLE001 - that client only: its socket failed before serving began
            log.debug("could not serve an accepted connection: %s", ex)
            sock.close()
            self.release(host)
        finally:
            self._adopting.discard(sock)

    def release(self, host: str) -> None:
        """One connection of ``host`` closed: free its slots."""
        self.accepted -= 1
        held = self.per_peer.get(host, 1) - 1
        if held > 0:
            self.per_peer[host] = held
        else:
            self.per_peer.pop(host, None)
        if held < self.limits.max_per_peer // 2:
            self.capped_peers.discard(host)  # logged again if it floods again

    def stop(self, timeout: float = 2.0) -> None:
        """Stop accepting, close every connection, let running requests finish; idempotent.

        Returns within ``timeout`` seconds; a request still in the app then is left
        to its daemon thread (its answer has nowhere to go).
        """
        deadline = time.monotonic() + timeout
        thread, self._thread = self._thread, None
        if thread is not None and self.loop is not None and not self.loop.is_closed():
            try:
                self.loop.call_soon_threadsafe(self._shutdown)
            except RuntimeError:  # the loop closed in between
                pass
            thread.join(max(0.0, deadline - time.monotonic()))
        self._sock.close()
        for _ in self.workers:
            self.jobs.put(None)
        for worker in self.workers:
            if worker.is_alive():
                worker.join(max(0.0, deadline - time.monotonic()))
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    @property
    def _tick(self) -> float:
        """How often deadlines are checked: a fraction of the shortest one."""
        limits = self.limits
        return min(0.5, limits.handshake / 4, limits.request / 4, limits.idle / 4)

    def watch(self, connection, slot: int | None, deadline: float | None) -> int | None:
        """File ``connection`` under the sweep that follows ``deadline`` (None: under none); its new slot.

        Deadlines are kept in slots one sweep wide, so a sweep looks only at the connections whose
        deadline has passed, not at every connection (10,000 idle SDKs cost it nothing).
        """
        new = None if deadline is None or deadline == float("inf") else int(deadline / self._tick_seconds) + 1
        if new == slot:
            return slot
        if slot is not None and (bucket := self._slots.get(slot)) is not None:
            bucket.discard(connection)
        if new is not None:
            bucket = self._slots.get(new)
            if bucket is None:
                bucket = self._slots[new] = set()
            bucket.add(connection)
        return new

    def _sweep(self) -> None:
        """Close every connection whose deadline has passed (one timer for all of them)."""
        now = self.loop.time()
        due = int(now / self._tick_seconds)
        for slot in [slot for slot in self._slots if slot <= due]:
            for connection in self._slots.pop(slot):
                connection.slot = None
                if connection.deadline < now:
                    log.debug("closing a connection: %s deadline passed", connection.phase)
                    connection.abort()
                else:  # not due after all (a float's rounding): filed again
                    connection.slot = self.watch(connection, None, connection.deadline)
        self.trimmer.observe(self.accepted)
        self.loop.call_later(self._tick, self._sweep)

    def _shutdown(self) -> None:
        self.loop.remove_reader(self._sock.fileno())
        for sock in list(self._adopting):
            sock.close()
        for connection in list(self.connections):
            connection.abort()
        # The aborts close their sockets in callbacks of the next iteration: stop after those.
        self.loop.call_soon(self.loop.stop)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
