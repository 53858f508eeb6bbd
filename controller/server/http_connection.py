"""One client connection of ``controller.server.httpserver``: TLS, parsing, deadlines, answers.

The connection lives on the event loop. httptools calls the ``on_*`` methods as
it parses; a complete request (or one whose body is too large to read) goes to
the server's worker queue, and the worker's framed answer comes back through
``_respond``. While a request is in the app, further bytes wait in ``pending``.
"""

from __future__ import annotations

import asyncio
import logging
import socket

import httptools
import orjson

from controller.server.wsgi_bridge import (
    ABORT,
    CLOSE,
    DONE,
    PEER_CERTS_KEY,
    RequestHead,
    build_environ,
    peer_certificates,
    plain_response,
)

log = logging.getLogger("controller.server.serve")

#: what Go's net/http writes when the first bytes on its TLS port are plain HTTP, then it closes
PLAIN_HTTP_ON_TLS = b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
#: the first five bytes net/http takes for plain HTTP (``tlsRecordHeaderLooksLikeHTTP``); others just fail TLS
_PLAIN_HTTP_STARTS = (b"GET /", b"HEAD ", b"POST ", b"PUT /", b"OPTIO")
#: after that answer, what the client still sends is read and dropped, up to this much and this long
PLAIN_HTTP_LINGER_BYTES, PLAIN_HTTP_LINGER_SECONDS = 64 * 1024, 1.0


class _Refused(Exception):
    """A request head the server answers itself (raised from a parser callback)."""

    def __init__(self, status: int, reason: str, message: str):
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message


class Connection(asyncio.Protocol):
    """One client connection: TLS (optional), parsing, deadlines, one request in the app at a time."""

    def __init__(self, server, peer_host: str = ""):
        self.server = server
        self.limits = server.limits
        self.parser = httptools.HttpRequestParser(self)
        self.transport = None
        self.tls = None
        self.first_bytes: bytes | None = None  # TLS: the first bytes, until five tell TLS from plain HTTP
        self.dropping: int | None = None  # plain HTTP answered on the TLS port: bytes still to read and drop
        self.peer_ders: tuple[bytes, ...] = ()  # the TLS client chain, leaf first (``TLSLayer.peer_ders``)
        self.peer_host = peer_host  # the client address: its slot (Limits.max_per_peer) is freed on close
        self.deadline, self.phase = float("inf"), ""
        self.slot = None  # where the server's sweep finds this connection's deadline (``HTTPServer.watch``)
        self.busy = False  # a request is in the app, or its response is being written
        self.fresh = True  # no request yet: the connect-time deadline still runs
        self.in_head = False
        self.head_bytes = self.head_size = 0
        self.head = self.body = None
        self.skip_body = False
        self.max_body = self.limits.max_body  # of the request being read
        #: complete requests (pipelined) waiting for the app: a list, as there is rarely more than one (an empty
        #: deque is 600 bytes, on each of 10,000 keep-alive connections)
        self.ready: list = []
        self.pending = bytearray()  # bytes received while busy, parsed after the response
        self.reading_paused = False
        self.eof = False  # the client sent all it will send
        self.write_paused = False  # the socket's send buffer is full

    # -- transport callbacks ---------------------------------------------------------
    def connection_made(self, transport) -> None:
        self.transport = transport
        self.server.connections.add(self)  # admitted by the server's accept (caps checked there)
        sock = transport.get_extra_info("socket")
        if sock is not None:  # answers are small: send each at once, never wait for an ACK (Nagle)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.server.tls is not None:
            self.tls = self.server.tls()
            self.first_bytes = b""
            self._arm(self.limits.handshake, "handshake")
        else:
            self._arm(self.limits.request, "request")

    def connection_lost(self, exc) -> None:
        self.server.connections.discard(self)
        self.server.release(self.peer_host)
        self.server.large_readers.discard(self)
        self._disarm()
        # What a closed connection held goes now, by reference counting: the parser refers back to this
        # connection (a cycle only the collector would find), the TLS state and the chain are large.
        self.parser = self.tls = None
        self.peer_ders = ()
        self.ready.clear()
        self.pending = bytearray()

    def data_received(self, data: bytes) -> None:
        if self.dropping is not None:
            self.dropping -= len(data)
            if self.dropping < 0:
                self.abort()
            return
        if self.tls is not None:
            data = self._decrypt(data)
        if data:
            self._receive(data)

    def eof_received(self):
        # Keep the socket: a client may half-close after its request and still read the answer.
        self.eof = True
        if not self.busy and not self.ready:
            self.close()
        return True

    # -- TLS -----------------------------------------------------------------------
    def _decrypt(self, data: bytes) -> bytes:
        """Plaintext from ``data`` (b"" while the handshake runs, or when it failed)."""
        was_established = self.tls.established
        if self.first_bytes is not None:
            data = self.first_bytes + data
            if len(data) < 5 and any(start.startswith(data) for start in _PLAIN_HTTP_STARTS):
                self.first_bytes = data  # too few bytes to tell yet (Go reads the whole record header too)
                return b""
            self.first_bytes = None
            if data[:5] in _PLAIN_HTTP_STARTS:  # http:// to the HTTPS port: answered as Go's server does
                self._answer_plain_http(len(data))
                return b""
        try:
            plain = self.tls.receive(data)
        except ConnectionError as ex:
            log.debug("TLS handshake or record failed: %s", ex)
            self._flush_tls()
            self.close()
            return b""
        self._flush_tls()
        if self.tls.established and not was_established:
            # APPSEC(peer-certs-from-tls): the chain of this handshake, for every request on it.
            self.peer_ders = self.tls.peer_ders()
            try:
                peer_certificates(self.peer_ders)  # parsed once here, so that every request's copy parses too
            except ValueError as ex:
                log.debug("closing a connection: its client certificate does not parse: %s", ex)
                self.close()
                return b""
            self.tls.release_buffers()  # the handshake's flights are drained: their buffers go
            self._arm(self.limits.request, "request")
        if self.tls.closed and not self.busy:
            self.close()
        return plain

    def _answer_plain_http(self, received: int) -> None:
        """Go's one-line 400, then the write side closed while the rest of the request is read and dropped.

        Closing at once would reset a client whose body follows its head in a second write (httpx does): the
        reset reaches it before it reads the answer. It closes the socket once it has read the answer, or the
        linger deadline does.
        """
        self.tls = None
        self.dropping = PLAIN_HTTP_LINGER_BYTES - received
        self.transport.write(PLAIN_HTTP_ON_TLS)
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self._arm(PLAIN_HTTP_LINGER_SECONDS, "plain HTTP linger")

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

    # -- parsing (httptools calls these from feed_data) ------------------------------
    def _receive(self, data: bytes) -> None:
        if self.busy or self.write_paused:
            self.pending += data  # parsed once the current response is written
            if len(self.pending) > self.limits.max_head and not self.reading_paused:
                self.reading_paused = True  # a client racing ahead waits for its answers
                self.transport.pause_reading()
            return
        if not self.fresh and not self.in_head and self.head is None and not self.ready:
            self._arm(self.limits.request, "request")  # first byte of a keep-alive request
        if self.head is None or self.in_head:
            self.head_bytes += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self.eof = True  # no protocol upgrades: answered as a plain request, then closed
        except httptools.HttpParserCallbackError as ex:
            refused = ex.__context__
            if isinstance(refused, _Refused):
                self._reject(refused.status, refused.reason, refused.message)
            else:
                self._reject(400, "Bad Request", f"malformed HTTP request: {ex}")
            return
        except httptools.HttpParserError as ex:
            self._reject(400, "Bad Request", f"malformed HTTP request: {ex}")
            return
        if (self.in_head and self.head_bytes > self.limits.max_head) or self.head_size > self.limits.max_head:
            self._reject(431, "Request Header Fields Too Large", "the request head is too large")
            return
        self._next_request()

    def on_message_begin(self) -> None:
        self.in_head, self.head, self.body, self.skip_body = True, RequestHead(), bytearray(), False
        self.url, self.head_size = b"", 0

    def on_url(self, url: bytes) -> None:
        self.url += url
        self.head_size += len(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self.head.headers.append((name, value))
        self.head_size += len(name) + len(value) + 4

    def on_headers_complete(self) -> None:
        parser, head = self.parser, self.head
        self.in_head, self.head_bytes = False, 0
        head.method, head.target = parser.get_method().decode("ascii"), self.url
        head.version, head.keep_alive = parser.get_http_version(), parser.should_keep_alive()
        _check_framing(head)
        head.declared_length = _content_length(head.headers)
        self.max_body = self._body_limit(self.url, head.headers)
        if head.declared_length is not None and head.declared_length > self.max_body:
            self._complete(too_large=True)  # the app answers 413 without the body being read
        elif head.version == "1.1" and _expects_continue(head.headers):
            self._write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def on_body(self, data: bytes) -> None:
        if self.skip_body:
            return
        self.body += data
        if len(self.body) > self.max_body:
            self._complete(too_large=True)

    def on_message_complete(self) -> None:
        if not self.skip_body:
            self._complete(too_large=False)
        self.head = None

    def _complete(self, too_large: bool) -> None:
        body = bytes(self.body[: self.max_body + 1])
        self.ready.append((self.head, body, too_large))
        self.skip_body = True

    # -- running the app ---------------------------------------------------------------
    def _next_request(self) -> None:
        if self.busy or not self.ready or self.transport.is_closing():
            return
        head, body, too_large = self.ready.pop(0)
        self.busy, self.fresh, self.too_large = True, False, too_large
        self._disarm()
        environ = build_environ(
            head,
            body,
            server=(self.server.host, self.server.port),
            peer=self.transport.get_extra_info("peername") or ("", 0),
            scheme=self.server.scheme,
            too_large=too_large,
        )
        if self.tls is not None:
            environ[PEER_CERTS_KEY] = peer_certificates(self.peer_ders)
        post = self.server.post

        def emit(data: bytes, outcome: str) -> None:
            try:
                post(self._respond, data, outcome)
            except RuntimeError:  # the server stopped while the app ran: nobody to answer
                pass

        self.server.jobs.put((environ, head, emit))

    def _body_limit(self, target: bytes, headers: list[tuple[bytes, bytes]]) -> int:
        """``Limits.max_body_for``, granted to a few connections at a time that pass the gate (APPSEC: memory)."""
        limit, readers = self.limits.max_body_for(target), self.server.large_readers
        if limit <= self.limits.max_body:
            return limit
        if len(readers) >= self.limits.large_bodies_at_once:
            return self.limits.max_body
        gate = self.limits.large_body_gate
        if gate is not None and not gate(headers):
            return self.limits.max_body
        readers.add(self)
        return limit

    def _respond(self, data: bytes, outcome: str) -> None:
        """Write what a worker emitted; after the last part, close or take the next request."""
        if self.transport.is_closing():
            return
        self._write(data)
        if outcome in (ABORT, CLOSE, DONE):
            self.server.large_readers.discard(self)  # the body is no longer held
        if outcome == ABORT:
            self.abort()
        elif outcome == CLOSE or (outcome == DONE and self.too_large):
            self.close()  # a body we did not read cannot be skipped safely
        elif outcome == DONE:
            self.busy = False
            self._arm(self.limits.idle, "idle")
            if not self.write_paused:
                self._take_next()
            if not self.busy and self.tls is not None and not self.transport.is_closing():
                # Idle until the next request (an SDK's next poll is 10 s away): what the TLS memory buffers grew to
                # for this exchange goes back; both are drained (the answer was flushed, every record read).
                self.tls.release_buffers()

    def _take_next(self) -> None:
        """Parse what arrived meanwhile and start the next request, or close after a half-close."""
        if self.reading_paused:
            self.reading_paused = False
            self.transport.resume_reading()
        pending, self.pending = bytes(self.pending), bytearray()
        if pending:
            self._receive(pending)
        else:
            self._next_request()
        if self.eof and not self.busy:
            self.close()

    def pause_writing(self) -> None:
        # A client that does not read its answers gets no new ones until it does.
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        if not self.busy and not self.transport.is_closing():
            self._take_next()

    def _reject(self, status: int, reason: str, message: str) -> None:
        """A request the parser refused: an error envelope, then close."""
        body = orjson.dumps({"error": {"code": "INVALID_REQUEST", "message": message}, "meta": {}})
        self._write(plain_response(status, reason, body))
        self.close()

    # -- deadlines and closing -------------------------------------------------------
    def _arm(self, seconds: float, phase: str) -> None:
        self.deadline, self.phase = self.server.loop.time() + seconds, phase
        self.slot = self.server.watch(self, self.slot, self.deadline)

    def _disarm(self) -> None:
        self.deadline = float("inf")
        if self.slot is not None:
            self.slot = self.server.watch(self, self.slot, None)

    def close(self) -> None:
        """Close after the buffered writes are sent."""
        self._disarm()
        if self.tls is not None and self.tls.established and not self.transport.is_closing():
            self.tls.shutdown()
            self._flush_tls()
        self.transport.close()

    def abort(self) -> None:
        self._disarm()
        self.transport.abort()


def _check_framing(head: RequestHead) -> None:
    """Raise ``_Refused`` for a head no server may act on (RFC 9112 sections 3.2 and 6.1; Go's answers).

    * a request line without a version (HTTP/0.9): 400; a version other than 1.x (``HTTP/2.0``): 505;
    * HTTP/1.1 without a Host header, or any request with two: 400 (the two are not joined);
    * a transfer coding other than exactly ``chunked`` (``identity, chunked``, ``gzip, chunked``) or two
      Transfer-Encoding headers: 501, the coding is not implemented.
    """
    if head.version == "0.9":  # a request line without a version: no HTTP/1.x request
        raise _Refused(400, "Bad Request", "malformed HTTP request: the request line has no HTTP version")
    if not head.version.startswith("1."):
        raise _Refused(505, "HTTP Version Not Supported", f"unsupported protocol version HTTP/{head.version}")
    hosts = codings = 0
    coding = b""
    for name, value in head.headers:
        lower = name.lower()
        if lower == b"host":
            hosts += 1
        elif lower == b"transfer-encoding":
            codings, coding = codings + 1, value
    if hosts > 1:
        raise _Refused(400, "Bad Request", "the request has more than one Host header")
    if hosts == 0 and head.version == "1.1":
        raise _Refused(400, "Bad Request", "an HTTP/1.1 request needs a Host header")
    if codings > 1 or (codings and coding.strip().lower() != b"chunked"):
        raise _Refused(501, "Not Implemented", "the only transfer coding supported is chunked")


def _content_length(headers: list) -> int | None:
    for name, value in headers:
        if name.lower() == b"content-length":
            return int(value)
    return None


def _expects_continue(headers: list) -> bool:
    return any(name.lower() == b"expect" and value.lower() == b"100-continue" for name, value in headers)
