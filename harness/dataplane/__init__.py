"""The data plane as an SDK speaks it: bind a service, dial it, move bytes.

:class:`DataPlane` (async) and :class:`SyncDataPlane` (threads, socket-like)
take a client logged in by certificate and the identity it enrolled with.
They create Dial/Bind sessions over the REST API, open a TLS channel to the
session's edge router, and speak the edge protocol with end-to-end encryption
as the SDKs do (libsodium ``crypto_kx`` + ``secretstream``): the router only
relays public keys and ciphertext.

    async with DataPlane(binder_client, binder) as host, DataPlane(dialer_client, dialer) as guest:
        await host.bind("echo", echo_handler)
        conn = await guest.dial("echo")
        await conn.send(b"hello")
        assert await conn.recv() == b"hello"
"""

from __future__ import annotations

import asyncio
import itertools
import ssl
import tempfile
from pathlib import Path
from typing import Awaitable, Callable
from urllib.parse import urlsplit

from nacl import bindings as sodium

from harness.client import ZitiClient
from harness.client.enroll import EnrolledIdentity
from harness.dataplane import flows
from router import tls_transport
from router.wire import ContentType as CT
from router.wire import Flag, Header, Message, boolean, i32, read_message, u32

HELLO_BODY = b"ziti-harness"
INVALID_SESSION = "Invalid Session"
#: the Bind's Precedence header byte, as the SDKs encode it
PRECEDENCES = ("default", "required", "failed")
REPLY_TIMEOUT = 10.0


class DialError(ConnectionError):
    """The router closed a dial or bind; ``str()`` is the router's reason."""


class _Crypto:
    """One connection's secretstream pair; ``client`` is the dialer side."""

    def __init__(self):
        self.public, self._secret = sodium.crypto_kx_keypair()
        self._tx = self._rx = None
        self._push = self._pull = None
        #: messages received before ``keys`` (None once keyed)
        self.pending: list[Message] | None = []

    def keys(self, peer_public: bytes, client: bool) -> bytes:
        """Derive the session keys; return the header to send first."""
        derive = sodium.crypto_kx_client_session_keys if client else sodium.crypto_kx_server_session_keys
        self._rx, self._tx = derive(self.public, self._secret, peer_public)
        self._push = sodium.crypto_secretstream_xchacha20poly1305_state()
        return sodium.crypto_secretstream_xchacha20poly1305_init_push(self._push, self._tx)

    def encrypt(self, data: bytes) -> bytes:
        return sodium.crypto_secretstream_xchacha20poly1305_push(self._push, data)

    def decrypt(self, data: bytes) -> bytes | None:
        """Plaintext, or None for the peer's stream header."""
        if self._pull is None:
            self._pull = sodium.crypto_secretstream_xchacha20poly1305_state()
            sodium.crypto_secretstream_xchacha20poly1305_init_pull(self._pull, data, self._rx)
            return None
        return sodium.crypto_secretstream_xchacha20poly1305_pull(self._pull, data)[0]


class Connection:
    """One overlay connection (async): send, recv, close_write (FIN), close."""

    def __init__(self, channel: "_Channel", conn_id: int, crypto: _Crypto | None):
        self.channel, self.conn_id, self.crypto = channel, conn_id, crypto
        self._inbox: asyncio.Queue[bytes] = asyncio.Queue()
        self._buffer = b""
        self.eof = self.closed = False

    async def send(self, data: bytes) -> None:
        """Send ``data`` as one message."""
        if self.closed:
            raise ConnectionError("connection closed")
        body = self.crypto.encrypt(bytes(data)) if self.crypto else bytes(data)
        await self.channel.send(Message(CT.DATA, body, {Header.CONN_ID: u32(self.conn_id)}))

    sendall = send

    async def recv(self, size: int = 65536) -> bytes:
        """Up to ``size`` bytes; ``b""`` once the peer closed or half-closed."""
        if not self._buffer and not self.eof:
            chunk = await self._inbox.get()
            if chunk == b"":
                self.eof = True
            self._buffer += chunk
        out, self._buffer = self._buffer[:size], self._buffer[size:]
        return out

    async def recv_exactly(self, size: int) -> bytes:
        out = b""
        while len(out) < size:
            chunk = await self.recv(size - len(out))
            if not chunk:
                raise EOFError(f"peer closed after {len(out)} of {size} bytes")
            out += chunk
        return out

    async def close_write(self) -> None:
        """Half-close: the peer reads EOF, this side can still read."""
        await self.channel.send(Message(CT.DATA, b"", {Header.CONN_ID: u32(self.conn_id), Header.FLAGS: u32(Flag.FIN)}))

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.channel.conns.pop(self.conn_id, None)
            self._inbox.put_nowait(b"")
            try:
                await self.channel.send(Message(CT.STATE_CLOSED, b"", {Header.CONN_ID: u32(self.conn_id)}))
            except ConnectionError:
                pass  # the channel went first: the router closed this connection with it

    def _deliver(self, message: Message) -> None:
        if self.crypto and self.crypto.pending is not None:
            self.crypto.pending.append(message)  # arrived before the keys: the dial is still returning
            return
        if message.content_type == CT.STATE_CLOSED:
            self.closed = True
            self.channel.conns.pop(self.conn_id, None)
            self._inbox.put_nowait(b"")
            return
        flags, body = message.int_header(Header.FLAGS) or 0, message.body
        if body and self.crypto:
            body = self.crypto.decrypt(body)
        if body and flags & Flag.MULTIPART_MSG:
            body = b"".join(_parts(body))
        if body:
            self._inbox.put_nowait(body)
        if flags & Flag.FIN:
            self._inbox.put_nowait(b"")


def _parts(body: bytes):
    """Go SDKs may pack several writes in one message: ``{u16 length, bytes}`` repeated."""
    offset = 0
    while offset + 2 <= len(body):
        length = int.from_bytes(body[offset : offset + 2], "little")
        yield body[offset + 2 : offset + 2 + length]
        offset += 2 + length


Handler = Callable[[Connection], Awaitable[None]]


class _Binding:
    def __init__(self, token: bytes, crypto: _Crypto | None, handler: Handler):
        self.token, self.crypto, self.handler = token, crypto, handler
        self.ready = asyncio.Event()


class _Channel:
    """The SDK end of one TLS channel to a router."""

    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self._seq = itertools.count(1)
        self._conn_ids = itertools.count(1)
        self.waiters: dict[int, asyncio.Future] = {}
        self.conns: dict[int, object] = {}
        self.tasks: set[asyncio.Task] = set()
        self.task: asyncio.Task | None = None

    async def send(self, message: Message) -> None:
        if self.writer.is_closing():
            raise ConnectionError("router channel closed")
        message.seq = message.seq or next(self._seq)
        self.writer.write(message.encode())
        await self.writer.drain()

    async def request(self, message: Message) -> Message:
        message.seq = next(self._seq)
        future = asyncio.get_running_loop().create_future()
        self.waiters[message.seq] = future
        try:
            await self.send(message)
            return await asyncio.wait_for(future, REPLY_TIMEOUT)
        finally:
            self.waiters.pop(message.seq, None)

    def next_conn_id(self) -> int:
        return next(self._conn_ids)

    async def run(self) -> None:
        try:
            while True:
                message = await read_message(self.reader)
                waiter = self.waiters.get(message.reply_for) if message.reply_for is not None else None
                if waiter is not None and not waiter.done():
                    waiter.set_result(message)
                elif message.content_type == CT.DIAL:
                    self._spawn(self._on_dial(message))
                elif message.content_type == CT.BIND_SUCCESS and isinstance(self.conns.get(message.conn_id), _Binding):
                    self.conns[message.conn_id].ready.set()
                else:
                    target = self.conns.get(message.conn_id)
                    if isinstance(target, Connection):
                        target._deliver(message)
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            for target in list(self.conns.values()):
                if isinstance(target, Connection):
                    target._deliver(Message(CT.STATE_CLOSED))
            for waiter in self.waiters.values():
                if not waiter.done():
                    waiter.set_exception(ConnectionError("router channel closed"))

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _on_dial(self, dial: Message) -> None:
        binding = self.conns.get(dial.conn_id)
        reply = Message(
            CT.DIAL_FAILED, b"invalid token", {Header.CONN_ID: u32(dial.conn_id), Header.REPLY_FOR: i32(dial.seq)}
        )
        if not isinstance(binding, _Binding) or dial.body != binding.token:
            return await self.send(reply)
        conn_id = dial.int_header(Header.ROUTER_PROVIDED_CONN_ID)
        crypto, header = None, None
        if binding.crypto is not None:
            crypto = _Crypto()
            crypto.public, crypto._secret = binding.crypto.public, binding.crypto._secret
            header = crypto.keys(dial.headers[Header.PUBLIC_KEY], client=False)
            crypto.pending = None
        conn = Connection(self, conn_id, crypto)
        self.conns[conn_id] = conn
        reply.content_type, reply.body = CT.DIAL_SUCCESS, u32(conn_id)
        await self.send(reply)
        if header:
            await self.send(Message(CT.DATA, header, {Header.CONN_ID: u32(conn_id)}))
        try:
            await binding.handler(conn)
        finally:
            await conn.close()

    async def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        self.writer.close()
        if self.task is not None:
            await asyncio.gather(self.task, return_exceptions=True)


class DataPlane:
    """An identity's data plane (async): ``bind``, ``dial``, ``close``."""

    def __init__(self, client: ZitiClient, identity: EnrolledIdentity):
        self.client, self.identity = client, identity
        self._channels: dict[str, _Channel] = {}
        self._sessions: dict[tuple[str, str], tuple[dict, dict]] = {}
        self._folder = Path(tempfile.mkdtemp(prefix="ziti-dp-"))

    async def __aenter__(self) -> "DataPlane":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    def _context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cadata=self.identity.ca_pem)
        chain, key = self.identity.cert_key().write(self._folder)
        context.load_cert_chain(chain, key)
        return context

    @staticmethod
    def _urls(session: dict) -> list[str]:
        urls = [r["supportedProtocols"].get("tls") for r in session["edgeRouters"] if r.get("supportedProtocols")]
        urls = [url for url in urls if url]
        if not urls:
            raise DialError("no edge router with a tls listener serves this service")
        return urls

    async def _channel(self, session: dict, url: str | None = None) -> _Channel:
        """The channel to ``url``, or to the session's routers in order: an open one first, else the first that
        answers (a router that went away is skipped, as an SDK fails over to the next router it may use)."""
        urls = [url] if url else self._urls(session)
        for candidate in urls:
            channel = self._channels.get(candidate)
            if channel is not None and not channel.writer.is_closing():
                return channel
        failure: OSError | None = None
        for candidate in urls:
            try:
                return await self._open_channel(candidate)
            except OSError as ex:
                failure = ex
        raise failure

    async def _open_channel(self, url: str) -> _Channel:
        parts = urlsplit(url)
        # the router's own TLS transport (router/tls_transport.py), as asyncio's SSL transport costs a copy and a
        # Python layer per record; 60 s bounds the handshake, asyncio's default
        reader, writer = await tls_transport.connect(parts.hostname, parts.port, self._context(), timeout=60.0)
        channel = _Channel(reader, writer)
        hello = Message(CT.HELLO, HELLO_BODY, {Header.SESSION_TOKEN: self.client.session_token.encode()})
        hello.seq = 1
        await channel.send(hello)
        reply = await read_message(reader)
        if reply.content_type != CT.RESULT or not reply.bool_header(Header.RESULT_SUCCESS):
            writer.close()
            raise DialError(reply.body.decode() or "hello refused")
        channel.task = asyncio.get_running_loop().create_task(channel.run())
        self._channels[url] = channel
        return channel

    async def _session(self, service: str, kind: str) -> tuple[dict, dict]:
        """The (cached) session and service detail, as SDKs keep a session per service and type."""
        key = (service, kind)
        if key not in self._sessions:
            session = await asyncio.to_thread(flows.dial, self.client, service, kind)
            found = await asyncio.to_thread(self.client.edge.call, "detailService", session["serviceId"])
            self._sessions[key] = (session, found)
        return self._sessions[key]

    async def _with_session(self, service: str, kind: str, attempt):
        """Run ``attempt(session, detail)``; refresh the session once, as the C SDK does, on ``Invalid Session`` or
        when none of its routers answers (they moved or went: a fresh session lists the routers online now)."""
        try:
            return await attempt(*await self._session(service, kind))
        except (DialError, OSError) as ex:
            if isinstance(ex, DialError) and str(ex) != INVALID_SESSION:
                raise
            self._sessions.pop((service, kind), None)
            return await attempt(*await self._session(service, kind))

    async def bind(
        self, service: str, handler: Handler, *, cost: int = 0, precedence: str = "default", every_router: bool = False
    ) -> int:
        """Host ``service``: ``await handler(conn)`` runs for each dial. Returns the (first) bind conn id.

        ``cost`` (0..65535) and ``precedence`` (``default``, ``required``, ``failed``) go in the Bind as the SDKs
        send them; the controller's terminator strategy reads them. ``every_router`` binds on each router the
        session lists (as the C SDK does up to its ``max_bindings``), so the service outlives one router.
        """
        headers = {Header.ROUTER_PROVIDED_CONN_ID: boolean(True), Header.SUPPORTS_BIND_SUCCESS: boolean(True)}
        if cost:
            headers[Header.COST] = cost.to_bytes(2, "little")
        if precedence != "default":
            headers[Header.PRECEDENCE] = bytes([PRECEDENCES.index(precedence)])

        async def attempt(session: dict, detail: dict) -> int:
            urls = self._urls(session) if every_router else [None]
            ids = [await self._bind(session, detail, handler, headers, url) for url in urls]
            return ids[0]

        return await self._with_session(service, "Bind", attempt)

    async def _bind(self, session: dict, detail: dict, handler: Handler, headers: dict, url: str | None = None) -> int:
        crypto = _Crypto() if detail.get("encryptionRequired") else None
        binding = _Binding(session["token"].encode(), crypto, handler)
        channel, conn_id, _ = await self._request(session, CT.BIND, binding, crypto, dict(headers), url)
        # the terminator exists once the router says BindSuccess (it creates it after replying)
        await asyncio.wait_for(binding.ready.wait(), REPLY_TIMEOUT)
        return conn_id

    async def dial(self, service: str) -> Connection:
        """Dial ``service``; returns the connection once the host accepted."""
        return await self._with_session(service, "Dial", self._dial)

    async def _dial(self, session: dict, detail: dict) -> Connection:
        crypto = _Crypto() if detail.get("encryptionRequired") else None
        conn = Connection(None, 0, crypto)
        channel, _, reply = await self._request(session, CT.CONNECT, conn, crypto, {Header.CALLER_ID: b"harness"})
        if crypto:
            header = crypto.keys(reply.headers[Header.PUBLIC_KEY], client=True)
            await channel.send(Message(CT.DATA, header, {Header.CONN_ID: u32(conn.conn_id)}))
            early, crypto.pending = crypto.pending, None
            for message in early:
                conn._deliver(message)
        return conn

    async def _request(
        self, session: dict, content_type: int, entry, crypto: _Crypto | None, headers: dict, url: str | None = None
    ):
        """Send Bind or Connect for ``entry`` on a new conn id; ``(channel, conn id, StateConnected)``."""
        channel = await self._channel(session, url)
        conn_id = channel.next_conn_id()
        channel.conns[conn_id] = entry
        if isinstance(entry, Connection):  # replies may arrive before the request returns
            entry.channel, entry.conn_id = channel, conn_id
        message = Message(content_type, session["token"].encode(), {Header.CONN_ID: u32(conn_id), **headers})
        if crypto:
            message.headers[Header.PUBLIC_KEY] = crypto.public
        reply = await channel.request(message)
        if reply.content_type != CT.STATE_CONNECTED:
            channel.conns.pop(conn_id, None)
            raise DialError(reply.body.decode())
        return channel, conn_id, reply

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()
