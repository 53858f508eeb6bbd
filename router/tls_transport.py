"""The router's TLS connections: an asyncio transport over a non-blocking :class:`ssl.SSLSocket`.

Why not asyncio's own SSL transport (``loop.create_server(ssl=...)``, ``start_tls``): it runs TLS over memory
BIOs behind two protocol layers, so every record is copied socket -> BIO -> plaintext buffer -> app, and each
write goes app -> SSL -> BIO -> transport buffer -> socket, with a Python call per layer. On the router's path
(a frame in, a frame out, per hop) that machinery was most of the time. Here OpenSSL reads and writes the socket
itself (the socket's OpenSSL object reads into one buffer and writes the caller's bytes), the loop's ``add_reader`` / ``add_writer`` say when, and the
protocol above (``asyncio.StreamReaderProtocol`` during the hello, then the channel's frame parser) sees the
same transport calls it saw before. See ``docs/architecture.md`` (the router section) for the figures.

* :func:`listen` binds the plain TCP listener; :func:`accept` runs the server handshake on an accepted socket
  within a timeout, :func:`connect` dials and runs the client handshake; both return ``(reader, writer)``.
* Reads: each readable event reads records (at most :data:`READ_CHUNK`; a small record with nothing more
  buffered ends it) into one buffer per thread and hands them to the protocol as one ``bytes``. TLS 1.3
  post-handshake messages (session tickets, key updates) surface as ``SSLWantReadError`` /
  ``SSLWantWriteError`` on either direction and are retried when the socket allows.
* Writes go to OpenSSL at once; what the socket cannot take yet waits in order and leaves on writable. A write
  OpenSSL started (``SSLWantWriteError``) is retried with the same buffer, as OpenSSL requires. The usual write
  buffer limits drive ``pause_writing`` / ``resume_writing``.
* ``close`` flushes, sends close_notify and closes (a peer that never reads is cut after
  :data:`CLOSE_TIMEOUT`, as asyncio's SSL shutdown timeout); ``abort`` closes at once. A peer that resets or
  goes without close_notify ends the connection as an EOF or an error, never an exception in the loop.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import ssl
import threading
from collections import deque

log = logging.getLogger("router")

#: plaintext read per readable event at most (several 16 KiB records), into one buffer per thread
READ_CHUNK = 256 * 1024
#: a record this large means more are likely queued: keep reading in the same event
_FULL_RECORD = 16 * 1024
#: queued small writes leave as one OpenSSL write of up to this many bytes
COALESCE = 256 * 1024
#: a closing connection whose peer does not take the rest of its data is cut after this many seconds
CLOSE_TIMEOUT = 30.0
#: the asyncio defaults
_HIGH, _LOW = 64 * 1024, 16 * 1024
#: accept errors that mean "too many files": stop accepting for a while (asyncio's own list and delay)
_ACCEPT_PAUSE = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
ACCEPT_RETRY_DELAY = 1.0

_local = threading.local()


def _read_buffer() -> memoryview:
    buffer = getattr(_local, "buffer", None)
    if buffer is None:
        buffer = _local.buffer = memoryview(bytearray(READ_CHUNK))
    return buffer


class PeerTLS:
    """The finished handshake as the router reads it (the part of :class:`ssl.SSLObject` it uses), valid after
    the socket closed: ``getpeercert``, ``get_verified_chain`` (``router/tls_policy.issuers_of``), ``cipher``,
    ``version``, ``selected_alpn_protocol``."""

    __slots__ = ("_sslobj",)

    def __init__(self, sock: ssl.SSLSocket):
        self._sslobj = sock._sslobj  # the OpenSSL connection, which outlives the socket's file descriptor

    def getpeercert(self, binary_form: bool = False):
        return self._sslobj.getpeercert(binary_form)

    def get_verified_chain(self) -> list:
        return self._sslobj.get_verified_chain()

    def cipher(self):
        return self._sslobj.cipher()

    def version(self) -> str | None:
        return self._sslobj.version()

    def selected_alpn_protocol(self) -> str | None:
        return self._sslobj.selected_alpn_protocol()


class TLSTransport(asyncio.Transport):
    """One TLS connection whose handshake is done (see the module text)."""

    #: no instance dict: one of these per connection, 10,000 SDKs on a router
    __slots__ = (
        "_close_timer",
        "_closing",
        "_eof_waiting",
        "_fd",
        "_head",
        "_high",
        "_loop",
        "_lost",
        "_low",
        "_peer",
        "_peername",
        "_protocol",
        "_protocol_paused",
        "_queue",
        "_read_wants_write",
        "_reader_on",
        "_reading",
        "_size",
        "_sock",
        "_ssl",
        "_view",
        "_write_wants_read",
        "_writer_on",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: ssl.SSLSocket, protocol: asyncio.BaseProtocol):
        super().__init__()
        self._loop, self._sock, self._protocol = loop, sock, protocol
        self._fd = sock.fileno()
        self._peer = PeerTLS(sock)
        #: OpenSSL's connection itself: reads and writes skip SSLSocket's Python wrappers (the hot path)
        self._ssl = sock._sslobj
        self._view = _read_buffer()
        #: the peer's address, read once (logs name it after the socket closed); the other extra info is read when
        #: asked (``get_extra_info``): no dict of it per connection
        try:
            self._peername = sock.getpeername()
        except OSError:
            self._peername = None
        #: a write OpenSSL began and must finish with the same buffer, then what waits behind it
        self._head: bytes | None = None
        #: made when a second write has to wait (most connections never need one: a deque is 600 bytes)
        self._queue: deque[bytes] | None = None
        self._size = 0
        self._high, self._low = _HIGH, _LOW
        self._protocol_paused = False
        self._reading = True
        #: TLS may need the other direction: a read that must write first, a write that must read first
        self._read_wants_write = self._write_wants_read = False
        self._reader_on = self._writer_on = False
        self._closing = self._lost = False
        self._eof_waiting = False
        self._close_timer: asyncio.TimerHandle | None = None
        protocol.connection_made(self)
        self._sync()

    # -- registration with the loop ---------------------------------------------------------
    def _sync(self) -> None:
        """Register for readable/writable exactly when something waits on it."""
        if self._lost:
            return
        want_read = (self._reading and not self._closing) or self._write_wants_read
        if want_read != self._reader_on:
            self._reader_on = want_read
            if want_read:
                self._loop.add_reader(self._fd, self._on_readable)
            else:
                self._loop.remove_reader(self._fd)
        want_write = (self._head is not None and not self._write_wants_read) or self._read_wants_write
        if want_write != self._writer_on:
            self._writer_on = want_write
            if want_write:
                self._loop.add_writer(self._fd, self._on_writable)
            else:
                self._loop.remove_writer(self._fd)

    def _on_readable(self) -> None:
        if self._write_wants_read:
            self._write_wants_read = False
            self._flush()
        if self._reading and not self._closing and not self._lost:
            self._read()
        self._sync()

    def _on_writable(self) -> None:
        if self._read_wants_write:
            self._read_wants_write = False
            if self._reading and not self._closing:
                self._read()
        if self._head is not None and not self._lost:
            self._flush()
        self._sync()

    # -- reading ----------------------------------------------------------------------------------
    def _read(self) -> None:
        view, tls = self._view, self._ssl
        got, eof, failure = 0, False, None
        while got < READ_CHUNK:
            try:
                count = tls.read(READ_CHUNK - got, view[got:] if got else view)
            except ssl.SSLWantReadError:
                break
            except ssl.SSLWantWriteError:
                self._read_wants_write = True
                break
            except ssl.SSLEOFError:
                eof = True  # the peer went without close_notify: an EOF, as asyncio's SSL transport reads it
                break
            except (BlockingIOError, InterruptedError):
                break
            except OSError as ex:  # ssl.SSLError included: a reset, a bad record
                failure = ex
                break
            if not count:
                eof = True  # close_notify
                break
            got += count
            if count < _FULL_RECORD and not tls.pending():
                break  # a small record and nothing buffered: no second read that would only say "want read"
        if got:
            self._protocol.data_received(bytes(view[:got]))
            if got >= READ_CHUNK and not self._lost:
                self._loop.call_soon(self._resume)  # more may wait inside OpenSSL, where epoll cannot see it
        if failure is not None:
            self._fatal(failure)
        elif eof and not self._lost:
            if self._reading:
                self._eof()
            else:
                self._eof_waiting = True  # reading paused by the protocol: tell it when it resumes

    def _eof(self) -> None:
        self._eof_waiting = False
        self._protocol.eof_received()  # TLS has no half-close: the connection ends either way
        self.close()

    def _resume(self) -> None:
        if self._lost or self._closing or not self._reading:
            return
        if self._eof_waiting:
            self._eof()
            return
        self._read()
        self._sync()

    def pause_reading(self) -> None:
        if self._reading and not self._closing:
            self._reading = False
            self._sync()

    def resume_reading(self) -> None:
        if not self._reading and not self._closing:
            self._reading = True
            self._sync()
            self._loop.call_soon(self._resume)  # plaintext OpenSSL already holds is invisible to epoll

    def is_reading(self) -> bool:
        return self._reading and not self._closing

    # -- writing ------------------------------------------------------------------------------------
    def write(self, data) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data argument must be a bytes-like object, not {type(data).__name__!r}")
        if self._closing or not data:
            return  # after close() the rest is dropped, as asyncio's SSL transport does
        if self._head is not None:
            if self._queue is None:
                self._queue = deque()
            self._queue.append(bytes(data))
            self._size += len(data)
            self._maybe_pause()
            return
        try:
            sent = self._ssl.write(data)
        except ssl.SSLWantWriteError:
            sent = 0
        except ssl.SSLWantReadError:
            sent, self._write_wants_read = 0, True
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as ex:
            self._fatal(ex)
            return
        if sent < len(data):
            self._head = bytes(data[sent:]) if sent else bytes(data)
            self._size += len(self._head)
            self._maybe_pause()
            self._sync()

    def writelines(self, list_of_data) -> None:
        self.write(b"".join(list_of_data))

    def _flush(self) -> None:
        """Send what waits, in order; a write OpenSSL started is retried with the same buffer."""
        tls = self._ssl
        while self._head is not None:
            head = self._head
            try:
                sent = tls.write(head)
            except ssl.SSLWantWriteError:
                break
            except ssl.SSLWantReadError:
                self._write_wants_read = True
                break
            except (BlockingIOError, InterruptedError):
                break
            except OSError as ex:
                self._fatal(ex)
                return
            self._size -= sent
            self._head = head[sent:] if sent < len(head) else self._next()
        self._maybe_resume()
        if self._head is None and self._closing:
            self._finish_close()

    def _next(self) -> bytes | None:
        queue = self._queue
        if not queue:
            self._queue = None  # back to nothing held: the memory goes with it
            return None
        first = queue.popleft()
        if not queue or len(first) >= COALESCE:
            return first
        parts, size = [first], len(first)
        while queue and size + len(queue[0]) <= COALESCE:
            part = queue.popleft()
            parts.append(part)
            size += len(part)
        return b"".join(parts)

    def can_write_eof(self) -> bool:
        return False

    def write_eof(self) -> None:
        raise NotImplementedError("TLS has no half-close")

    def get_write_buffer_size(self) -> int:
        return self._size

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._low, self._high

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        if high is None:
            high = _HIGH if low is None else 4 * low
        if low is None:
            low = high // 4
        if not high >= low >= 0:
            raise ValueError(f"high ({high!r}) must be >= low ({low!r}) must be >= 0")
        self._high, self._low = high, low
        self._maybe_pause()

    def _maybe_pause(self) -> None:
        if not self._protocol_paused and self._size > self._high:
            self._protocol_paused = True
            try:
                self._protocol.pause_writing()
            except Exception:  # noqa: BLE001 - as asyncio: a protocol's bug is logged, not raised into write()
                log.exception("router: %r pause_writing failed", self._protocol)

    def _maybe_resume(self) -> None:
        if self._protocol_paused and self._size <= self._low:
            self._protocol_paused = False
            try:
                self._protocol.resume_writing()
            except Exception:  # noqa: BLE001 - as above
                log.exception("router: %r resume_writing failed", self._protocol)

    # -- ending -------------------------------------------------------------------------------------
    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        self._sync()
        if self._head is None:
            self._loop.call_soon(self._finish_close)
        else:
            self._close_timer = self._loop.call_later(CLOSE_TIMEOUT, self.abort)

    def _finish_close(self) -> None:
        if self._lost:
            return
        try:
            self._ssl.shutdown()  # close_notify; the peer's own is not waited for
        except (OSError, ValueError, AttributeError):
            pass  # the peer went, or the socket cannot take it now: it reads an EOF instead
        self._lose(None)

    def abort(self) -> None:
        self._lose(None)

    def _fatal(self, ex: BaseException) -> None:
        self._lose(ex)

    def _lose(self, ex: BaseException | None) -> None:
        if self._lost:
            return
        self._closing = self._lost = True
        self._head, self._size, self._queue = None, 0, None
        if self._close_timer is not None:
            self._close_timer.cancel()
        if self._reader_on:
            self._loop.remove_reader(self._fd)
        if self._writer_on:
            self._loop.remove_writer(self._fd)
        self._reader_on = self._writer_on = False
        self._loop.call_soon(self._connection_lost, ex)

    def _connection_lost(self, ex: BaseException | None) -> None:
        try:
            self._protocol.connection_lost(ex)
        finally:
            self._sock.close()

    # -- the rest of asyncio.Transport ------------------------------------------------------------------
    def get_extra_info(self, name: str, default=None):
        if name == "peercert":
            return self._peer.getpeercert()
        if name == "cipher":
            return self._peer.cipher()
        if name == "peername":
            return self._peername
        if name == "sockname":
            try:
                return self._sock.getsockname()
            except OSError:
                return None
        value = {"socket": self._sock, "ssl_object": self._peer, "sslcontext": self._sock.context}.get(name)
        return default if value is None else value

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._protocol = protocol

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._protocol

    def __repr__(self) -> str:
        state = "closed" if self._lost else "closing" if self._closing else "open"
        return f"<TLSTransport fd={self._fd} {state} peer={self._peername}>"


# -- handshakes and connections ---------------------------------------------------------------------------
def _wake(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_result(None)


async def _handshake(loop: asyncio.AbstractEventLoop, sock: ssl.SSLSocket) -> None:
    fd = sock.fileno()
    while True:
        try:
            sock.do_handshake()
            return
        except ssl.SSLWantReadError:
            add, remove = loop.add_reader, loop.remove_reader
        except ssl.SSLWantWriteError:
            add, remove = loop.add_writer, loop.remove_writer
        waiter = loop.create_future()
        add(fd, _wake, waiter)
        try:
            await waiter
        finally:
            remove(fd)


async def _start(sock: ssl.SSLSocket, timeout: float | None, limit: int):
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeout):
            await _handshake(loop, sock)
    except BaseException:
        sock.close()
        raise
    reader = asyncio.StreamReader(limit=limit, loop=loop)
    protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
    transport = TLSTransport(loop, sock, protocol)
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


async def accept(
    sock: socket.socket,
    context: ssl.SSLContext,
    timeout: float | None,
    *,
    limit: int = 2**16,
    pending: set[asyncio.Task] | None = None,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """The server handshake on an accepted socket within ``timeout`` seconds; the socket is closed on failure
    (``ssl.SSLError``, ``ConnectionError``, ``TimeoutError``: all ``OSError``) and on cancellation.

    ``pending``, when given, holds the calling task while the handshake runs, so a listener that stops can
    cancel the connections that never got past it.
    """
    task = asyncio.current_task()
    if pending is not None:
        pending.add(task)
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        try:  # no TLS state before the peer's first byte: an idle connection costs a socket and this task
            async with asyncio.timeout(timeout):
                waiter = loop.create_future()
                loop.add_reader(sock.fileno(), _wake, waiter)
                try:
                    await waiter
                finally:
                    loop.remove_reader(sock.fileno())
            if not sock.recv(1, socket.MSG_PEEK):  # closed without a byte: no TLS state for it either
                raise ConnectionResetError("closed before the TLS handshake")
            tls = context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        except BaseException:
            sock.close()
            raise
        left = None if timeout is None else max(0.1, timeout - (loop.time() - started))
        return await _start(tls, left, limit)
    finally:
        if pending is not None:
            pending.discard(task)


async def connect(
    host: str,
    port: int,
    context: ssl.SSLContext,
    *,
    server_hostname: str | None = None,
    timeout: float | None = None,
    limit: int = 2**16,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Dial ``host:port`` (each resolved address in turn) and run the client handshake, like
    ``asyncio.open_connection(host, port, ssl=context)``; ``timeout`` bounds the handshake."""
    loop = asyncio.get_running_loop()
    failures: list[OSError] = []
    sock = None
    for family, kind, proto, _, address in await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, address)
            break
        except OSError as ex:
            sock.close()
            sock = None
            failures.append(ex)
        except BaseException:
            sock.close()
            raise
    if sock is None:
        if len(failures) == 1:
            raise failures[0]
        raise OSError(f"Multiple exceptions: {', '.join(str(ex) for ex in failures)}" if failures else "no address")
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        tls = context.wrap_socket(sock, server_hostname=server_hostname or host, do_handshake_on_connect=False)
    except BaseException:
        sock.close()
        raise
    return await _start(tls, timeout, limit)


#: connections at once from one address on one listener (the link listener's; the controller's listeners have the
#: same); more are closed as they are accepted
MAX_PER_ADDRESS = 512


class Listener:
    """Plain TCP listening sockets; each accepted socket goes (non-blocking, TCP_NODELAY) to ``on_accept``,
    which runs as its own task (typically :func:`accept` and then the channel). At most ``max_per_address``
    connections from one address are open at once; more are closed as they are accepted."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        sockets: list[socket.socket],
        on_accept,
        backlog: int,
        max_per_address: int = MAX_PER_ADDRESS,
    ):
        self.loop, self.sockets, self.on_accept, self.backlog = loop, sockets, on_accept, backlog
        self.max_per_address = max_per_address
        #: open connections by peer address
        self.per_address: dict[str, int] = {}
        #: each connection's task -> its peer address, until the task ends
        self.addresses: dict[asyncio.Task, str] = {}
        self.closed = False
        for sock in sockets:
            loop.add_reader(sock.fileno(), self._accept, sock)

    def _accept(self, listener: socket.socket) -> None:
        for _ in range(self.backlog):
            try:
                sock, _ = listener.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return
            except OSError as ex:
                if ex.errno in _ACCEPT_PAUSE:
                    log.warning("router: cannot accept (%s), pausing %g s", ex.strerror, ACCEPT_RETRY_DELAY)
                    self.loop.remove_reader(listener.fileno())
                    self.loop.call_later(ACCEPT_RETRY_DELAY, self._again, listener)
                    return
                raise
            try:
                address = sock.getpeername()[0]
            except OSError:  # gone already
                sock.close()
                continue
            if self.per_address.get(address, 0) >= self.max_per_address:
                log.warning("router: %s has %d connections open already, closing", address, self.max_per_address)
                sock.close()
                continue
            self.per_address[address] = self.per_address.get(address, 0) + 1
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            task = self.loop.create_task(self.on_accept(sock))
            self.addresses[task] = address  # one dict entry per connection, no closure
            task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task) -> None:
        self._gone(self.addresses.pop(task))

    def _gone(self, address: str) -> None:
        left = self.per_address.get(address, 1) - 1
        if left > 0:
            self.per_address[address] = left
        else:
            self.per_address.pop(address, None)

    def _again(self, listener: socket.socket) -> None:
        if not self.closed:
            self.loop.add_reader(listener.fileno(), self._accept, listener)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for sock in self.sockets:
            self.loop.remove_reader(sock.fileno())
            sock.close()


def listen(
    loop: asyncio.AbstractEventLoop,
    host: str | None,
    port: int,
    on_accept,
    backlog: int = 100,
    max_per_address: int = MAX_PER_ADDRESS,
) -> Listener:
    """Bind ``host:port`` on every address it resolves to (as ``loop.create_server``); ``OSError`` when one
    cannot be bound (nothing stays bound then)."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys((i[0], i[1], i[2], "", i[4]) for i in infos):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(backlog)
            sock.setblocking(False)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return Listener(loop, sockets, on_accept, backlog, max_per_address)
