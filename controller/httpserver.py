"""HTTP/1.1 server: one event loop does all socket I/O, a thread pool runs the WSGI app.

Why not a thread per connection (waitress, cheroot): a client that connects and
sends nothing, or trickles bytes, must not hold a worker. Here a connection costs
the loop a few objects until its request is complete; only then does a worker
run the app. Deadlines (``Limits``) bound every phase a client controls:

* ``handshake``: TLS handshake finished within this many seconds of connecting;
* ``request``: the whole request (head and body) arrives within this many seconds
  of its first byte, or of connecting for a connection's first request;
* ``idle``: a keep-alive connection with no new request is closed after this.

HTTP framing is h11's. TLS, when ``tls`` is given, is a layer over memory
buffers (``controller.tls.TLSLayer``), so the handshake never blocks the loop.
"""
from __future__ import annotations

import asyncio
import logging
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

import h11

from controller.wsgi_bridge import PEER_CERTS_KEY, build_environ, run_app

log = logging.getLogger("controller.serve")


@dataclass(frozen=True)
class Limits:
    """Deadlines (seconds) and sizes a client cannot exceed."""

    handshake: float = 10.0
    request: float = 10.0
    idle: float = 30.0
    #: bodies are read before the app runs; past this the app sees this much and the connection closes
    max_body: int = 2 * 1024 * 1024
    max_head: int = 64 * 1024
    max_connections: int = 10_000


class HTTPServer:
    """An HTTP (or, with ``tls``, HTTPS) server for a WSGI app.

    Construction binds the port (so a busy port fails here, before anything
    serves); ``start`` serves from a daemon thread; ``stop`` closes the listener
    and every connection and returns within about two seconds. ``error`` holds an
    exception from the serving thread, re-raised by ``stop``. ``tls`` makes one
    TLS layer per connection (see ``controller.tls.TLSServer``).
    """

    scheme = "http"

    def __init__(self, app, host: str = "127.0.0.1", port: int = 0, *, threads: int = 8,
                 limits: Limits | None = None, tls: Callable[[], object] | None = None):
        self.app = app
        self.limits = limits or Limits()
        self.tls = tls  # a factory of one TLS layer per connection
        self.host = host
        self._sock = socket.create_server((host, port), backlog=1024)
        self.port = self._sock.getsockname()[1]
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=f"http-{self.port}")
        self.loop: asyncio.AbstractEventLoop | None = None
        self.connections: set = set()
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    def start(self) -> "HTTPServer":
        """Serve from a daemon thread; returns once the listener accepts connections."""
        self._thread = threading.Thread(target=self._serve, name=f"http-loop-{self.port}", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self.error is not None:
            raise self.error
        return self

    def _serve(self) -> None:
        self.loop = asyncio.new_event_loop()
        try:
            self._listener = self.loop.run_until_complete(
                self.loop.create_server(lambda: Connection(self), sock=self._sock, backlog=1024))
            self._ready.set()
            self.loop.run_forever()
        except BaseException as ex:  # noqa: BLE001 - surfaced through .error and stop()
            self.error = ex
            self._ready.set()
        finally:
            self.loop.close()

    def stop(self) -> None:
        """Stop accepting, close every connection, wait briefly for workers; idempotent."""
        thread, self._thread = self._thread, None
        if thread is not None and self.loop is not None and not self.loop.is_closed():
            try:
                self.loop.call_soon_threadsafe(self._shutdown)
            except RuntimeError:  # the loop closed in between
                pass
            thread.join(2)
        self._sock.close()
        self.pool.shutdown(wait=False, cancel_futures=True)
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    def _shutdown(self) -> None:
        self._listener.close()
        for connection in list(self.connections):
            connection.abort()
        self.loop.stop()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class Connection(asyncio.Protocol):
    """One client connection: TLS (optional), h11 framing, deadlines, one request at a time."""

    def __init__(self, server: HTTPServer):
        self.server = server
        self.limits = server.limits
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=self.limits.max_head)
        self.transport = None
        self.tls = None
        self.peer_certs = None
        self.timer = None
        self.busy = False
        self.fresh = True
        self.body = bytearray()
        self.request = None

    # -- transport callbacks ---------------------------------------------------------
    def connection_made(self, transport) -> None:
        self.transport = transport
        if len(self.server.connections) >= self.limits.max_connections:
            transport.abort()
            return
        self.server.connections.add(self)
        if self.server.tls is not None:
            self.tls = self.server.tls()
            self._arm(self.limits.handshake, "handshake")
        else:
            self._arm(self.limits.request, "request")

    def connection_lost(self, exc) -> None:
        self.server.connections.discard(self)
        self._disarm()

    def data_received(self, data: bytes) -> None:
        if self.tls is not None:
            data = self._decrypt(data)
            if data is None:
                return
        if data:
            self._receive(data)

    def eof_received(self):
        # Keep the socket: a client may half-close after its request and still read the answer.
        self._receive(b"")
        return True

    # -- TLS -----------------------------------------------------------------------
    def _decrypt(self, data: bytes) -> bytes | None:
        """Plaintext from ``data``; None when the handshake failed or has not finished."""
        was_established = self.tls.established
        try:
            plain = self.tls.receive(data)
        except ConnectionError as ex:
            log.debug("TLS handshake or record failed: %s", ex)
            self._flush_tls()
            self.close()
            return None
        self._flush_tls()
        if not self.tls.established:
            return None
        if not was_established:
            # APPSEC(peer-certs-from-tls): the chain of this handshake, for every request on it.
            self.peer_certs = self.tls.peer_certs()
            self._arm(self.limits.request, "request")
        if self.tls.closed and not plain:
            self._receive(b"")
            return None
        return plain

    def _flush_tls(self) -> None:
        out = self.tls.outgoing()
        if out and not self.transport.is_closing():
            self.transport.write(out)

    def _write(self, data: bytes) -> None:
        if not data or self.transport.is_closing():
            return
        if self.tls is None:
            self.transport.write(data)
        else:
            self.tls.send(data)
            self._flush_tls()

    # -- requests --------------------------------------------------------------------
    def _receive(self, data: bytes) -> None:
        if data and not self.busy and self.request is None and not self.fresh and self.h11.their_state is h11.IDLE:
            self._arm(self.limits.request, "request")  # first byte of a keep-alive request
        try:
            self.h11.receive_data(data)
        except RuntimeError:  # data after the peer closed: nothing more to read
            return
        self._advance()

    def _advance(self) -> None:
        while not self.busy:
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as ex:
                self._reject(ex)
                return
            if event is h11.NEED_DATA or event is h11.PAUSED:
                self._continue_if_expected()
                return
            if isinstance(event, h11.Request):
                self._on_request(event)
            elif isinstance(event, h11.Data):
                self.body += event.data
                if len(self.body) > self.limits.max_body:
                    self._dispatch(bytes(self.body[: self.limits.max_body + 1]))
            elif isinstance(event, h11.EndOfMessage):
                self._dispatch(bytes(self.body))
            elif isinstance(event, h11.ConnectionClosed):
                self.close()
                return

    def _on_request(self, request: h11.Request) -> None:
        self.request, self.body = request, bytearray()
        declared = _content_length(request)
        if declared is not None and declared > self.limits.max_body:
            self._dispatch(b"", declared)  # the app answers 413 without the body being read

    def _continue_if_expected(self) -> None:
        if self.request is not None and self.h11.they_are_waiting_for_100_continue:
            self._write(self.h11.send(h11.InformationalResponse(status_code=100, headers=[])))

    def _dispatch(self, body: bytes, declared: int | None = None) -> None:
        """The request is complete (or too large to read): run the app in a worker."""
        self.busy, self.fresh = True, False
        self._disarm()
        self.transport.pause_reading()
        environ = build_environ(self.request, body, server=(self.server.host, self.server.port),
                                peer=self.transport.get_extra_info("peername") or ("", 0),
                                scheme=self.server.scheme, declared_length=declared)
        if self.tls is not None:
            environ[PEER_CERTS_KEY] = list(self.peer_certs)
        loop = self.server.loop

        def emit(events: list, done: bool | None) -> None:
            loop.call_soon_threadsafe(self._respond, events, done)

        try:
            self.server.pool.submit(run_app, self.server.app, environ, emit)
        except RuntimeError:  # the pool is shutting down
            self.abort()

    def _respond(self, events: list, done: bool | None) -> None:
        """Write events a worker emitted; ``done`` True ends the response, False aborts."""
        if self.transport.is_closing():
            return
        try:
            for event in events:
                self._write(self.h11.send(event))
        except h11.LocalProtocolError as ex:  # e.g. fewer bytes than the declared length
            log.debug("response does not match its framing: %s", ex)
            done = False
        if done is False:
            self.abort()
        elif done:
            self._next_cycle()

    def _next_cycle(self) -> None:
        if self.h11.our_state is h11.DONE and self.h11.their_state is h11.DONE:
            self.h11.start_next_cycle()
            self.busy, self.request, self.body = False, None, bytearray()
            self._arm(self.limits.idle, "idle")
            self.transport.resume_reading()
            self._advance()  # a pipelined request may already be buffered
        else:
            self.close()  # MUST_CLOSE, or a body we did not read

    def _reject(self, ex: h11.RemoteProtocolError) -> None:
        """A malformed request: a 4xx if a response can still be sent, then close."""
        if self.h11.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            status = ex.error_status_hint
            body = b'{"error":{"code":"INVALID_REQUEST","message":"malformed HTTP request"},"meta":{}}'
            try:
                self._write(self.h11.send(h11.Response(status_code=status, headers=[
                    (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close")])))
                self._write(self.h11.send(h11.Data(body)) + self.h11.send(h11.EndOfMessage()))
            except h11.LocalProtocolError:
                pass
        self.close()

    # -- deadlines and closing -------------------------------------------------------
    def _arm(self, seconds: float, phase: str) -> None:
        self._disarm()
        self.timer = self.server.loop.call_later(seconds, self._expired, phase)

    def _disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _expired(self, phase: str) -> None:
        log.debug("closing a connection: %s deadline passed", phase)
        self.abort()

    def close(self) -> None:
        """Close after the buffered writes are sent."""
        self._disarm()
        if self.tls is not None and self.tls.established:
            self.tls.shutdown()
            self._flush_tls()
        self.transport.close()

    def abort(self) -> None:
        self._disarm()
        self.transport.abort()


def _content_length(request: h11.Request) -> int | None:
    for name, value in request.headers:
        if name == b"content-length":
            return int(value)
    return None
