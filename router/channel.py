"""One framed TLS connection (an SDK's channel or a link to a peer router): reads, replies, writes.

A channel reads frames in its own task. Its first frame goes to the ``hello`` it is served with (within the
hello timeout); after it, latency probes are answered here, replies to this side's own requests (Dial, a
link route) resolve their waiters, and every other frame goes to the handler its content type names in the
``handlers`` table; a content type missing from the table goes to ``unknown``. The channel knows nothing
else: references point one way (router -> channel -> handlers).

Writes keep their order. Circuit data leaves through an :class:`Outlet` per circuit end: straight onto the
socket while the channel keeps up, queued on that outlet (per circuit, bounded by the router) while the
peer reads slower than the router writes. A flusher per channel then moves queued frames round-robin, so
one circuit's backlog never holds another circuit's frames.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import logging
import ssl
import threading
from collections import OrderedDict, deque
from typing import Awaitable, Callable, Mapping

from router.tls_policy import issuers_of
from router.version import hello_version
from router.wire import (
    MAGIC,
    MAX_BODY,
    MAX_HEADERS,
    PREFIX,
    FrameError,
    Header,
    Message,
    boolean,
    i32,
    parse_headers,
    read_message,
)
from router.wire import ContentType as CT

log = logging.getLogger("router")
VERSION = hello_version()
#: router-provided conn ids start at 2^31, SDK-chosen ones stay below (the real router's split)
ROUTER_CONN_IDS = 2**31
#: the socket's own write buffer: above HIGH a channel counts as congested and outlets queue
CHANNEL_HIGH, CHANNEL_LOW = 256 * 1024, 64 * 1024
_channel_ids = itertools.count(1)

Handler = Callable[["Channel", Message], "Awaitable[None] | None"]


class ChannelClosed(Exception):
    """The channel went away while a request waited for its reply."""


class Outlet:
    """One circuit end's way out of a channel, with its own bounded queue (see the module text)."""

    __slots__ = ("channel", "pending", "pending_bytes", "paused", "_progress", "on_writable")

    def __init__(self, channel: "Channel"):
        self.channel = channel
        self.pending: deque[bytes] = deque()
        self.pending_bytes = 0
        #: a link peer asked this circuit to wait (LinkPause): frames queue until it resumes
        self.paused = False
        self._progress: asyncio.Event | None = None
        #: called once the queue fell below the channel's low mark (e.g. to tell a link peer to resume)
        self.on_writable: Callable[[], None] | None = None

    def put(self, data: bytes) -> None:
        channel = self.channel
        if channel.closed:
            return
        if self.pending or self.paused or channel.congested():
            self.pending.append(data)
            self.pending_bytes += len(data)
            if not self.paused:
                channel.schedule(self)
        else:
            channel.write(data)

    def resume(self) -> None:
        self.paused = False
        if self.pending:
            self.channel.schedule(self)

    def progressed(self) -> None:
        if self._progress is not None:
            self._progress.set()
        if self.on_writable is not None and self.pending_bytes <= CHANNEL_LOW:
            callback, self.on_writable = self.on_writable, None
            callback()

    async def wait_progress(self) -> None:
        if self._progress is None:
            self._progress = asyncio.Event()
        self._progress.clear()
        await self._progress.wait()


class Channel:
    """The router's end of one TLS connection."""

    #: no instance dict: one of these per SDK, 10,000 on a router
    __slots__ = (
        "reader",
        "writer",
        "transport",
        "id",
        "peer",
        "caller",
        "link_id",
        "dialed",
        "token",
        "conns",
        "_seq",
        "_conn_ids",
        "_waiters",
        "_queued",
        "_flusher",
        "_frames",
        "closed",
        "faults",
        "held_in",
        "held_out",
    )

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, kind: str = "ch"):
        self.reader, self.writer = reader, writer
        self.transport = writer.transport
        self.id = f"{kind}{next(_channel_ids)}"
        peer = writer.get_extra_info("peername") or ("?", 0)
        self.peer = f"{peer[0]}:{peer[1]}"
        #: set by the hello: the SDK's API session (edge) or the peer router (link)
        self.caller = None
        #: a link's id (link channels only), and whether this router dialed it
        self.link_id: str | None = None
        self.dialed = False
        #: the API session token the SDK presented last (hello or UpdateToken; edge channels only): reported to the
        #: controller at every reconnect of the control channel, so the channel's dials keep working
        self.token = ""
        #: conn id (edge) or circuit id (link) -> what it names (a binding or a circuit)
        self.conns: dict = {}
        #: the last sequence number and router-provided conn id given (ints: no counter object per channel)
        self._seq, self._conn_ids = 0, ROUTER_CONN_IDS - 1
        self._waiters: dict[int, asyncio.Future] = {}
        #: outlets with frames queued, in turn order; made when an outlet first queues (most channels never do)
        self._queued: OrderedDict[Outlet, None] | None = None
        self._flusher: asyncio.Task | None = None
        #: the frame parser once the read loop runs (see :meth:`_serve_frames`)
        self._frames: _Frames | None = None
        self.closed = False
        #: the router's edge faults while any is on (SDK channels only; ``router/faults.py``), else None
        self.faults = None
        #: frames a delaying fault holds, from the SDK and to it (``router/faults.py``)
        self.held_in = self.held_out = None
        if self.transport is not None:
            self.transport.set_write_buffer_limits(high=CHANNEL_HIGH, low=CHANNEL_LOW)

    # -- sending ------------------------------------------------------------------
    def next_conn_id(self) -> int:
        self._conn_ids += 1
        return self._conn_ids

    def next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def write(self, data: bytes) -> None:
        """One encoded frame onto the socket (through the edge faults while one is on)."""
        if not self.closed:
            if self.faults is None:
                self.transport.write(data)
            else:
                self.faults.outgoing(self, data)

    def congested(self) -> bool:
        if self.faults is not None:  # frames a delaying edge fault holds count too
            return self.faults.congested(self)
        return self.transport.get_write_buffer_size() > CHANNEL_HIGH

    def wake_writers(self) -> None:
        """Frames left that were held (``router/faults.py``): what waits for room to write looks again."""
        if self._frames is not None:
            self._frames.resume_writing()

    def send_nowait(self, message: Message) -> None:
        """Queue ``message`` on the socket (order kept); a closed channel drops it."""
        if self.closed:
            return
        if not message.seq:
            message.seq = self.next_seq()
        if self.faults is None:
            self.transport.write(message.encode())
        else:
            self.faults.outgoing(self, message.encode())

    async def send(self, message: Message) -> None:
        self.send_nowait(message)
        await self.drain()

    async def drain(self) -> None:
        """Wait while the peer reads slower than we write (backpressure)."""
        if self.closed:
            return
        if self._frames is not None:
            while not self.closed and self.congested():  # a lost transport has no buffer to ask about
                await self._frames.writable()
            return
        try:
            await self.writer.drain()
        except (ConnectionError, ssl.SSLError):
            self.close()

    def reply(self, request: Message, content_type: int, body: bytes = b"", **headers: bytes) -> Message:
        out = Message(content_type, body, {Header.REPLY_FOR: i32(request.seq)})
        for key, value in headers.items():
            out.headers[getattr(Header, key.upper())] = value
        return out

    async def request(self, message: Message, timeout: float, on_reply=None) -> Message:
        """Send and wait for the message whose ReplyFor is its sequence.

        ``on_reply(reply)`` runs in the read loop before the next frame is read,
        for state that must change before the peer's following messages arrive.
        """
        reply = self.send_request(message, on_reply)
        try:
            await self.drain()
            return await within(reply, timeout)
        finally:  # answered, timed out, or cancelled while the peer was slow to read: no reply is awaited any more
            self._waiters.pop(message.seq, None)

    def send_request(self, message: Message, on_reply=None) -> asyncio.Future:
        """Send ``message`` now; the future of its reply, for :meth:`when_replied` (``on_reply`` as for
        :meth:`request`)."""
        message.seq = self.next_seq()
        future = asyncio.get_running_loop().create_future()
        future.on_reply = on_reply
        self._waiters[message.seq] = future
        self.send_nowait(message)
        return future

    def when_replied(self, message: Message, reply: asyncio.Future, timeout: float, then) -> None:
        """``then(reply)`` once the reply :meth:`send_request` gave the future of came, the channel closed or
        ``timeout`` passed (``asyncio.TimeoutError`` on it); no task."""

        def done(future: asyncio.Future) -> None:
            self._waiters.pop(message.seq, None)
            then(future)

        when_done(reply, timeout, done)

    # -- per-circuit queues ----------------------------------------------------------
    def schedule(self, outlet: Outlet) -> None:
        if self._queued is None:
            self._queued = OrderedDict()
        self._queued[outlet] = None
        if self._flusher is None and not self.closed:
            self._flusher = asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        """Move queued frames round-robin, one per outlet per turn, whenever the socket takes more."""
        try:
            while self._queued and not self.closed:
                await self.drain()
                queued = self._queued  # close() lets it go: what this turn holds is dropped with it
                while queued and not self.closed and not self.congested():
                    for outlet in list(queued):
                        if outlet.paused or not outlet.pending:
                            del queued[outlet]
                            continue
                        data = outlet.pending.popleft()
                        outlet.pending_bytes -= len(data)
                        self.write(data)
                        if not outlet.pending:
                            del queued[outlet]
                        outlet.progressed()
                        if self.congested():
                            break
        finally:
            self._flusher = None
            if not self._queued:
                self._queued = None

    # -- the read loop -------------------------------------------------------------
    async def serve(
        self,
        hello: Callable[["Channel", Message], Awaitable[bool]],
        handlers: Mapping[int, Handler],
        unknown: Handler,
        hello_timeout: float,
    ) -> None:
        """Read until the peer goes or a handler closes the channel; one log line for anything hostile.

        Once the hello is accepted the caller's task waits on one future for the channel's life (no chain of
        coroutines held per channel: with 10,000 SDKs on a router each one counts); frames are handled as TLS
        delivers them, and a cancelled wait closes the channel.
        """

        if await self._guarded(self._greet(hello, hello_timeout), keep_open=True):
            try:
                await self._serve_frames(handlers, unknown)
            finally:
                self.close()

    async def _greet(self, hello: Callable[["Channel", Message], Awaitable[bool]], hello_timeout: float) -> bool:
        try:
            first = await asyncio.wait_for(self._first_message(), hello_timeout)
        except asyncio.TimeoutError:
            log.warning("router: %s sent no hello in %g s, closing", self.peer, hello_timeout)
            return False
        if first.content_type != CT.HELLO:
            raise FrameError(f"expected hello, got content type {first.content_type}")
        return await hello(self, first)

    async def _first_message(self) -> Message:
        """The peer's first frame; while an edge fault is on it may be dropped (wait for another) or held."""
        while True:
            message = await read_message(self.reader)
            if self.faults is None:
                return message
            delay = self.faults.hello(self, message)
            if delay is not None:
                if delay:
                    await asyncio.sleep(delay)
                return message

    async def serve_after_hello(self, handlers: Mapping[int, Handler], unknown: Handler) -> None:
        """Read on a channel whose hello this side sent (a link it dialed)."""
        await self._guarded(self._loop(handlers, unknown))

    async def request_first(self, hello: Message) -> Message:
        """Send this side's hello and read its answer (before any read loop runs)."""
        hello.seq = hello.seq or self.next_seq()
        await self.send(hello)
        return await read_message(self.reader)

    async def _guarded(self, work, keep_open: bool = False):
        """``work``'s result; the channel is closed after it, or only when it failed or said no (``keep_open``)."""
        result = None
        try:
            result = await work
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass  # the peer went away: nothing to tell
        except FrameError as ex:
            log.warning("router: %s %s: %s, closing", self.id, self.peer, ex)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - one channel's bug must not stop the router
            log.exception("router: %s %s failed, closing", self.id, self.peer)
        finally:
            if not (keep_open and result):
                self.close()
        return result

    async def _loop(self, handlers: Mapping[int, Handler], unknown: Handler) -> None:
        await self._serve_frames(handlers, unknown)

    def _serve_frames(self, handlers: Mapping[int, Handler], unknown: Handler) -> asyncio.Future:
        """From here frames are parsed as TLS delivers them (:class:`_Frames`): no task wake-up per frame. The
        future is done when the channel closes."""
        reader = self.reader
        leftover = bytes(reader._buffer)
        reader._buffer.clear()
        frames = self._frames = _Frames(self, handlers, unknown, leftover)
        self.transport.set_protocol(frames)
        # the stream pair served the hello only: the StreamReader and its protocol go (about 1.5 KB a channel with
        # 10,000 SDKs on a router). The StreamWriter stays (one that is collected closes its transport), detached
        # from them; its drain is not used from here (``drain`` waits on the frames)
        self.reader = None
        self.writer._reader, self.writer._protocol = None, frames
        del reader
        if not self.transport.is_reading():
            self.transport.resume_reading()
        frames.parse()
        if self.closed or self.transport.is_closing():  # it closed before the frames took over: no connection_lost
            frames.finish()  # will reach them, so the channel's life ends here
        return frames.done

    def dispatch(self, message: Message, handlers: Mapping[int, Handler], unknown: Handler, released: bool = False):
        """One frame: latency answered, replies to their waiters, the rest to its handler (maybe an awaitable).

        While an edge fault is on, a frame goes through it first (it comes back ``released``, or never).
        """
        if self.faults is not None and not released:
            return self.faults.incoming(self, message, handlers, unknown)
        content_type = message.content_type
        if content_type == CT.LATENCY:
            out = self.reply(message, CT.RESULT, result_success=boolean(True))
            if Header.REFLECTED in message.headers:
                out.headers[Header.REFLECTED] = message.headers[Header.REFLECTED]
            self.send_nowait(out)
            return None
        waiters = self._waiters
        if waiters and Header.REPLY_FOR in message.headers:
            waiter = waiters.get(message.reply_for)
            if waiter is not None:
                if not waiter.done():
                    if waiter.on_reply is not None:
                        waiter.on_reply(message)
                    waiter.set_result(message)
                return None
        return handlers.get(content_type, unknown)(self, message)

    def fingerprint(self) -> str:
        leaf = self.writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        return hashlib.sha1(leaf).hexdigest() if leaf else ""

    def issuers(self) -> list[bytes] | None:
        """The CAs above this channel's client certificate in its verified chain (see ``tls_policy.issuers_of``)."""
        return issuers_of(self.writer.get_extra_info("ssl_object"))

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for future in self._waiters.values():
            if not future.done():
                future.set_exception(ChannelClosed(self.id))
        queued, self._queued = self._queued, None
        for outlet in queued or ():
            outlet.progressed()
        self.writer.close()
        if self._frames is not None:
            self._frames.finish()


def loop_on_thread(name: str) -> tuple[asyncio.AbstractEventLoop, threading.Thread]:
    """A new event loop running on a daemon thread of its own, called ``name``."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name=name, daemon=True)
    thread.start()
    return loop, thread


def stop_loop_thread(loop: asyncio.AbstractEventLoop | None, thread: threading.Thread | None, timeout: float = 5.0):
    """Every task of ``loop`` (made by :func:`loop_on_thread`) cancelled and ended, so none is destroyed pending at
    exit; then the loop stops and its thread is joined."""
    if loop is None or not loop.is_running():
        return
    try:
        asyncio.run_coroutine_threadsafe(_cancel_other_tasks(), loop).result(timeout)
    except (TimeoutError, RuntimeError):
        pass
    loop.call_soon_threadsafe(loop.stop)
    if thread is not None:
        thread.join(timeout)


async def _cancel_other_tasks() -> None:
    tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def running_in(loop: asyncio.AbstractEventLoop | None) -> bool:
    """Called in ``loop``'s own thread, by what it runs."""
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


async def within(future: asyncio.Future, timeout: float):
    """``future``'s result, or ``asyncio.TimeoutError`` (set on it) after ``timeout`` seconds. For a future this side
    completes (a reply, a word): one timer, where ``asyncio.wait_for`` adds a future and two callbacks per call."""
    timer = asyncio.get_running_loop().call_later(timeout, _time_out, future)
    try:
        return await future
    finally:
        timer.cancel()


def when_done(future: asyncio.Future, timeout: float, then) -> None:
    """:func:`within` as a callback: ``then(future)`` once it is done, ``asyncio.TimeoutError`` set on it after
    ``timeout`` seconds; no task."""
    timer = asyncio.get_running_loop().call_later(timeout, _time_out, future)

    def done(future: asyncio.Future) -> None:
        timer.cancel()
        then(future)

    future.add_done_callback(done)


def outcome(future: asyncio.Future):
    """A done future's result; None when it failed (a timeout, a closed channel) or was cancelled."""
    if future.cancelled() or future.exception() is not None:
        return None
    return future.result()


def _time_out(future: asyncio.Future) -> None:
    if not future.done():
        future.set_exception(asyncio.TimeoutError())


class _Frames(asyncio.Protocol):
    """A channel's frames, parsed in ``data_received``; a handler's awaitable pauses reading until it is done."""

    __slots__ = ("channel", "handlers", "unknown", "buffer", "blocked", "done", "_resumed")

    def __init__(self, channel: Channel, handlers: Mapping[int, Handler], unknown: Handler, leftover: bytes):
        self.channel, self.handlers, self.unknown = channel, handlers, unknown
        self.buffer = bytearray(leftover)
        self.blocked = False
        loop = asyncio.get_running_loop()
        self.done = loop.create_future()
        self._resumed: asyncio.Future | None = None

    # -- reading ----------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.blocked:
            self.parse()

    def parse(self) -> None:
        channel, buffer, offset = self.channel, self.buffer, 0
        view = memoryview(buffer)
        try:
            while len(buffer) - offset >= PREFIX.size and not channel.closed:
                magic, content_type, seq, header_len, body_len = PREFIX.unpack_from(buffer, offset)
                if magic != MAGIC:
                    raise FrameError(f"bad magic {magic.hex()}")
                if header_len > MAX_HEADERS or body_len > MAX_BODY:
                    raise FrameError(f"oversized frame (headers {header_len}, body {body_len} bytes)")
                start = offset + PREFIX.size
                end = start + header_len + body_len
                if len(buffer) < end:
                    break
                headers = parse_headers(bytes(view[start : start + header_len])) if header_len else {}
                message = Message(content_type, bytes(view[start + header_len : end]), headers, seq)
                offset = end
                pending = channel.dispatch(message, self.handlers, self.unknown)
                if pending is not None:
                    self.blocked = True
                    channel.transport.pause_reading()
                    asyncio.get_running_loop().create_task(self._after(pending))
                    break
        except FrameError as ex:
            log.warning("router: %s %s: %s, closing", channel.id, channel.peer, ex)
            channel.close()
        except (ConnectionError, ssl.SSLError):
            channel.close()  # the peer went away: nothing to tell
        except Exception:  # noqa: BLE001 - one channel's bug must not stop the router
            log.exception("router: %s %s failed, closing", channel.id, channel.peer)
            channel.close()
        finally:
            view.release()
            if offset == len(buffer):
                buffer.clear()
            elif offset:
                del buffer[:offset]

    async def _after(self, pending) -> None:
        channel = self.channel
        try:
            await pending
        except asyncio.CancelledError:
            channel.close()
            raise
        except (ConnectionError, ssl.SSLError):
            channel.close()
        except Exception:  # noqa: BLE001 - as in parse
            log.exception("router: %s %s failed, closing", channel.id, channel.peer)
            channel.close()
        self.blocked = False
        if not channel.closed:
            channel.transport.resume_reading()
            self.parse()

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc) -> None:
        self.channel.close()

    def finish(self) -> None:
        if not self.done.done():
            self.done.set_result(None)
        self._wake()

    # -- writing ----------------------------------------------------------------------
    def pause_writing(self) -> None:
        pass  # congestion is read from the transport's buffer (Channel.congested)

    def resume_writing(self) -> None:
        self._wake()

    def _wake(self) -> None:
        if self._resumed is not None and not self._resumed.done():
            self._resumed.set_result(None)
        self._resumed = None

    async def writable(self) -> None:
        if self._resumed is None:
            self._resumed = asyncio.get_running_loop().create_future()
        await self._resumed
