"""One SDK's TLS channel: hello, latency probes, replies, and the edge messages.

A channel reads frames in its own task. Hello must come first and within the
hello timeout; after it, latency probes are answered here, replies to the
router's own requests (Dial) resolve their waiters, and everything else goes
to the router's :class:`~router.edge.Edge`. Any protocol violation closes this
channel only, with one log line.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import logging
import ssl

from router.link import Caller
from router.wire import ContentType as CT
from router.wire import FrameError, Header, Message, boolean, i32, read_message

log = logging.getLogger("router")
VERSION = b"v1.6.0-py|pyrouter|2026-11-21|linux|amd64"
#: router-provided conn ids start at 2^31, SDK-chosen ones stay below (the real router's split)
ROUTER_CONN_IDS = 2**31
_channel_ids = itertools.count(1)


class ChannelClosed(Exception):
    """The channel went away while a request waited for its reply."""


class Channel:
    """The router's end of one SDK connection."""

    def __init__(self, router, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.router, self.reader, self.writer = router, reader, writer
        self.id = f"ch{next(_channel_ids)}"
        peer = writer.get_extra_info("peername") or ("?", 0)
        self.peer = f"{peer[0]}:{peer[1]}"
        self.caller: Caller | None = None
        self.conns: dict[int, object] = {}
        self._seq = itertools.count(1)
        self._conn_ids = itertools.count(ROUTER_CONN_IDS)
        self._waiters: dict[int, asyncio.Future] = {}
        self.closed = False

    # -- sending ------------------------------------------------------------------
    def next_conn_id(self) -> int:
        return next(self._conn_ids)

    def send_nowait(self, message: Message) -> None:
        """Queue ``message`` on the socket (order kept); a closed channel drops it."""
        if self.closed:
            return
        if not message.seq:
            message.seq = next(self._seq)
        self.writer.write(message.encode())

    async def send(self, message: Message) -> None:
        self.send_nowait(message)
        await self.drain()

    async def drain(self) -> None:
        """Wait while the peer reads slower than we write (backpressure)."""
        if not self.closed:
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
        message.seq = next(self._seq)
        future = asyncio.get_running_loop().create_future()
        future.on_reply = on_reply
        self._waiters[message.seq] = future
        try:
            await self.send(message)
            return await asyncio.wait_for(future, timeout)
        finally:
            self._waiters.pop(message.seq, None)

    # -- the read loop -------------------------------------------------------------
    async def serve(self) -> None:
        try:
            hello = await asyncio.wait_for(read_message(self.reader), self.router.hello_timeout)
            if await self._hello(hello):
                await self._loop()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass  # the peer went away: nothing to tell
        except asyncio.TimeoutError:
            log.warning("router: %s sent no hello in %g s, closing", self.peer, self.router.hello_timeout)
        except FrameError as ex:
            log.warning("router: %s %s: %s, closing", self.id, self.peer, ex)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - one channel's bug must not stop the router
            log.exception("router: %s %s failed, closing", self.id, self.peer)
        finally:
            self.close()
            await self.router.edge.channel_closed(self)

    async def _hello(self, hello: Message) -> bool:
        if hello.content_type != CT.HELLO:
            raise FrameError(f"expected hello, got content type {hello.content_type}")
        token = hello.str_header(Header.SESSION_TOKEN) or ""
        try:
            self.caller = Caller(**await asyncio.to_thread(self.router.link.hello, token, self.fingerprint()))
        except PermissionError as ex:
            log.warning("router: %s %s refused: %s", self.id, self.peer, ex)
            await self.send(self.reply(hello, CT.RESULT, str(ex).encode(), result_success=boolean(False)))
            return False
        await self.send(
            self.reply(
                hello,
                CT.RESULT,
                result_success=boolean(True),
                connection_id=self.id.encode(),
                router_id=self.router.router_id.encode(),
                hello_version=VERSION,
                supports_bind_success=boolean(True),
            )
        )
        self.router.channel_opened(self)
        return True

    def fingerprint(self) -> str:
        leaf = self.writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        return hashlib.sha1(leaf).hexdigest() if leaf else ""

    async def _loop(self) -> None:
        while not self.closed:
            message = await read_message(self.reader)
            waiter = self._waiters.get(message.reply_for) if message.reply_for is not None else None
            if waiter is not None and message.content_type != CT.LATENCY:
                if not waiter.done():
                    if waiter.on_reply is not None:
                        waiter.on_reply(message)
                    waiter.set_result(message)
            elif message.content_type == CT.LATENCY:
                out = self.reply(message, CT.RESULT, result_success=boolean(True))
                if Header.REFLECTED in message.headers:
                    out.headers[Header.REFLECTED] = message.headers[Header.REFLECTED]
                await self.send(out)
            else:
                await self.router.edge.handle(self, message)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for future in self._waiters.values():
            if not future.done():
                future.set_exception(ChannelClosed(self.id))
        self.writer.close()
