"""The router's TLS transport (``router/tls_transport.py``) over real loopback sockets and real TLS.

Each test runs its own event loop whose exception handler records what reaches it: a peer that resets, goes
without close_notify or never finishes its handshake must end its connection quietly, never as an exception
in the loop.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
import threading

import pytest
from cryptography.hazmat.primitives.serialization import Encoding
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.client import pki as hp
from router import tls_transport
from router.tls_policy import issuers_of, new_context


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    """A CA, the server's context (client certificates required) and a client context presenting a leaf."""
    folder = tmp_path_factory.mktemp("tls")
    root = hp.make_root_ca("transport root")
    server_leaf = hp.make_leaf(root, "127.0.0.1", ips=["127.0.0.1"], eku=("serverAuth",))
    client_leaf = hp.make_leaf(root, "transport client")
    server = new_context(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(*server_leaf.write(folder, "server"))
    server.load_verify_locations(cadata=hp.pem(root.cert))
    server.verify_mode = ssl.CERT_REQUIRED
    client = hp.client_ssl_context(hp.pem(root.cert), client_leaf)
    return {"server": server, "client": client, "root": root, "client_leaf": client_leaf}


def run(coro_fn, timeout: float = 30):
    """Run ``coro_fn()`` on a fresh loop; fail if anything reached the loop's exception handler."""
    loop = asyncio.new_event_loop()
    reached = []
    loop.set_exception_handler(lambda _loop, context: reached.append(context))
    try:
        return loop.run_until_complete(asyncio.wait_for(coro_fn(), timeout))
    finally:
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()
        assert reached == [], reached


class Recorder(asyncio.Protocol):
    """Everything the transport tells its protocol, in order."""

    def __init__(self):
        self.data = bytearray()
        self.events: list = []
        self.lost = asyncio.get_running_loop().create_future()
        self.arrived = asyncio.Event()
        self.on_data = None

    def data_received(self, data: bytes) -> None:
        self.data += data
        self.events.append("data")
        self.arrived.set()
        if self.on_data is not None:
            self.on_data(data)

    def eof_received(self):
        self.events.append("eof")
        return False

    def connection_lost(self, exc) -> None:
        self.events.append("lost")
        self.lost.set_result(exc)

    def pause_writing(self) -> None:
        self.events.append("pause")

    def resume_writing(self) -> None:
        self.events.append("resume")

    async def until(self, size: int) -> None:
        while len(self.data) < size and not self.lost.done():
            self.arrived.clear()
            await self.arrived.wait()


async def server_and_client(tls, *, small_buffers: bool = False):
    """One accepted connection (``tls_transport.accept``) and its client (``tls_transport.connect``)."""
    loop = asyncio.get_running_loop()
    accepted = loop.create_future()

    async def on_accept(sock):
        if small_buffers:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 32 * 1024)
        accepted.set_result(await tls_transport.accept(sock, tls["server"], 5))

    listener = tls_transport.listen(loop, "127.0.0.1", 0, on_accept)
    port = listener.sockets[0].getsockname()[1]
    client = await tls_transport.connect("127.0.0.1", port, tls["client"], timeout=5)
    if small_buffers:
        client[1].get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)
    server = await accepted
    listener.close()
    return server, client


def take_over(streams) -> tuple[tls_transport.TLSTransport, Recorder]:
    """Swap the stream protocol for a recorder (as the router's channel swaps in its frame parser)."""
    _, writer = streams
    recorder = Recorder()
    writer.transport.set_protocol(recorder)
    return writer.transport, recorder


def test_data_crosses_both_ways_and_the_peer_certificate_outlives_the_socket(tls):
    async def scenario():
        (s_reader, s_writer), (c_reader, c_writer) = await server_and_client(tls)
        c_writer.write(b"hello router")
        assert await s_reader.readexactly(12) == b"hello router"
        s_writer.write(b"hello sdk")
        await s_writer.drain()
        assert await c_reader.readexactly(9) == b"hello sdk"

        peer = s_writer.get_extra_info("ssl_object")
        assert s_writer.get_extra_info("peername") == c_writer.get_extra_info("sockname")
        assert s_writer.get_extra_info("sslcontext") is tls["server"]
        assert ("commonName", "127.0.0.1") in [
            rdn for rdns in c_writer.get_extra_info("peercert")["subject"] for rdn in rdns
        ]
        c_writer.close()
        assert await s_reader.read() == b""  # close_notify: a clean end of stream
        s_writer.close()
        await s_writer.wait_closed()
        # read after the socket closed, as the router does when a CA leaves the bundle
        assert peer.getpeercert(binary_form=True) == tls["client_leaf"].cert.public_bytes(Encoding.DER)
        assert issuers_of(peer) == [tls["root"].cert.public_bytes(Encoding.DER)]
        assert s_writer.get_extra_info("socket").fileno() == -1

    run(scenario)


def _chunks(sizes: list[int]) -> list[bytes]:
    """Chunks whose bytes say which chunk they are, so any reordering shows."""
    return [(struct.pack(">H", index) * (size // 2 + 1))[:size] for index, size in enumerate(sizes)]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(1, 200_000), min_size=1, max_size=40))
def test_writes_keep_their_order_through_backpressure(tls, sizes):
    """A reader that stopped: writes queue in order, pause_writing above the high mark, resume_writing once the
    peer reads again below the low mark, and every byte arrives once, in order (OpenSSL's unfinished writes are
    retried with the same buffer)."""
    chunks = _chunks(sizes)

    async def scenario():
        server, client = await server_and_client(tls, small_buffers=True)
        s_transport, s_recorder = take_over(server)
        c_transport, c_recorder = take_over(client)
        c_transport.pause_reading()
        s_transport.set_write_buffer_limits(high=64 * 1024, low=16 * 1024)
        for chunk in chunks:
            s_transport.write(chunk)
        expected = b"".join(chunks)
        backlog = s_transport.get_write_buffer_size()
        assert backlog <= len(expected)
        assert ("pause" in s_recorder.events) == (backlog > 64 * 1024)
        c_transport.resume_reading()
        await c_recorder.until(len(expected))
        assert bytes(c_recorder.data) == expected
        assert s_transport.get_write_buffer_size() == 0
        assert s_recorder.events.count("pause") == s_recorder.events.count("resume")
        s_transport.close()
        c_transport.close()
        await asyncio.gather(s_recorder.lost, c_recorder.lost)

    run(scenario)


def test_close_flushes_what_waits_and_the_peer_reads_everything_then_a_clean_eof(tls):
    async def scenario():
        server, client = await server_and_client(tls, small_buffers=True)
        s_transport, s_recorder = take_over(server)
        c_transport, c_recorder = take_over(client)
        c_transport.pause_reading()
        payload = _chunks([4 * 2**20])[0]
        s_transport.write(payload)
        assert s_transport.get_write_buffer_size() > 0  # the peer does not read: most of it waits
        s_transport.close()
        s_transport.write(b"after close")  # dropped, as asyncio's SSL transport drops it
        assert s_transport.is_closing() and not s_recorder.lost.done()
        c_transport.resume_reading()
        assert await c_recorder.lost is None
        assert bytes(c_recorder.data) == payload
        assert c_recorder.events[-2:] == ["eof", "lost"]
        assert await s_recorder.lost is None

    run(scenario)


def test_abort_drops_what_waits_at_once(tls):
    async def scenario():
        server, client = await server_and_client(tls, small_buffers=True)
        s_transport, s_recorder = take_over(server)
        c_transport, c_recorder = take_over(client)
        c_transport.pause_reading()
        s_transport.write(bytes(4 * 2**20))
        s_transport.abort()
        assert await s_recorder.lost is None
        assert s_transport.get_write_buffer_size() == 0
        c_transport.resume_reading()
        await c_recorder.lost  # an EOF or a reset, whichever the kernel reports first
        assert len(c_recorder.data) < 4 * 2**20

    run(scenario)


@pytest.mark.parametrize("how", ["reset", "fin without close_notify"])
def test_a_peer_that_vanishes_ends_the_connection_quietly(tls, how):
    """ECONNRESET, or a TCP FIN with no TLS close_notify: the protocol hears of it; the loop sees no error."""

    async def scenario():
        loop = asyncio.get_running_loop()
        accepted = loop.create_future()

        async def on_accept(sock):
            accepted.set_result(await tls_transport.accept(sock, tls["server"], 5))

        listener = tls_transport.listen(loop, "127.0.0.1", 0, on_accept)
        port = listener.sockets[0].getsockname()[1]

        def client():
            raw = socket.create_connection(("127.0.0.1", port), timeout=10)
            return tls["client"].wrap_socket(raw, server_hostname="127.0.0.1")

        peer = await asyncio.to_thread(client)
        transport, recorder = take_over(await accepted)
        await asyncio.to_thread(peer.sendall, b"last words")
        await recorder.until(len(b"last words"))
        if how == "reset":
            peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            peer.close()
        else:
            peer.shutdown(socket.SHUT_WR)  # SSLSocket.shutdown sends no close_notify
        exc = await recorder.lost
        peer.close()
        listener.close()
        assert bytes(recorder.data) == b"last words"
        if how == "reset":
            assert exc is None or isinstance(exc, OSError)
        else:
            assert exc is None and recorder.events[-2:] == ["eof", "lost"]
        assert transport.is_closing()

    run(scenario)


def test_a_client_that_never_finishes_its_handshake_is_cut_at_the_timeout(tls):
    async def scenario():
        loop = asyncio.get_running_loop()
        outcome = loop.create_future()

        async def on_accept(sock):
            try:
                await tls_transport.accept(sock, tls["server"], 0.2)
            except OSError as ex:
                outcome.set_result(ex)

        listener = tls_transport.listen(loop, "127.0.0.1", 0, on_accept)
        port = listener.sockets[0].getsockname()[1]
        silent = socket.create_connection(("127.0.0.1", port))
        assert isinstance(await outcome, TimeoutError)
        silent.settimeout(10)
        assert await asyncio.to_thread(silent.recv, 10) == b""  # the router closed its end
        silent.close()
        listener.close()

    run(scenario)


def test_a_client_that_speaks_no_tls_fails_the_handshake_with_the_reason(tls):
    async def scenario():
        loop = asyncio.get_running_loop()
        outcome = loop.create_future()

        async def on_accept(sock):
            try:
                await tls_transport.accept(sock, tls["server"], 5)
            except OSError as ex:
                outcome.set_result(ex)

        listener = tls_transport.listen(loop, "127.0.0.1", 0, on_accept)
        port = listener.sockets[0].getsockname()[1]
        plain = socket.create_connection(("127.0.0.1", port))
        plain.sendall(b"GET / HTTP/1.1\r\nHost: router\r\n\r\n")
        failure = await outcome
        plain.close()
        listener.close()
        assert isinstance(failure, ssl.SSLError) and failure.reason  # e.g. HTTP_REQUEST or WRONG_VERSION_NUMBER

    run(scenario)


def test_paused_reading_holds_data_and_the_end_until_resumed(tls):
    """The protocol pauses at its first data: nothing more (not even the peer's close) reaches it until it
    resumes, and then the rest arrives in order, including plaintext OpenSSL already held."""
    size = tls_transport.READ_CHUNK + 12345

    async def scenario():
        loop = asyncio.get_running_loop()
        accepted = loop.create_future()

        async def on_accept(sock):
            accepted.set_result(await tls_transport.accept(sock, tls["server"], 5))

        listener = tls_transport.listen(loop, "127.0.0.1", 0, on_accept)
        port = listener.sockets[0].getsockname()[1]
        go, sent = threading.Event(), threading.Event()
        payload = _chunks([size])[0]

        def client():
            with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
                with tls["client"].wrap_socket(raw, server_hostname="127.0.0.1") as peer:
                    go.wait(10)
                    peer.sendall(payload)
                    peer.shutdown(socket.SHUT_WR)  # no close_notify (a blocking unwrap would wait for ours)
                    sent.set()
                    while peer.recv(65536):
                        pass  # until the router closes: closing with unread bytes would reset the connection

        sender = asyncio.ensure_future(asyncio.to_thread(client))
        transport, recorder = take_over(await accepted)
        recorder.on_data = lambda _data: transport.pause_reading()
        go.set()
        await recorder.arrived.wait()
        first = len(recorder.data)
        assert await asyncio.to_thread(sent.wait, 10)  # all sent and the end sent, while this side reads nothing
        for _ in range(20):
            await asyncio.sleep(0)  # let the loop run: a paused transport must deliver nothing meanwhile
        assert len(recorder.data) == first and recorder.events == ["data"]
        recorder.on_data = None
        transport.resume_reading()
        assert await recorder.lost is None
        await sender
        assert bytes(recorder.data) == payload
        assert recorder.events[-2:] == ["eof", "lost"]
        listener.close()

    run(scenario)


def test_a_dial_to_a_port_nobody_listens_on_is_refused(tls):
    async def scenario():
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        with pytest.raises(ConnectionRefusedError):
            await tls_transport.connect("127.0.0.1", port, tls["client"], timeout=5)

    run(scenario)


def test_listen_on_a_taken_port_raises_and_binds_nothing():
    async def scenario():
        loop = asyncio.get_running_loop()

        async def never(sock):
            sock.close()

        first = tls_transport.listen(loop, "127.0.0.1", 0, never)
        port = first.sockets[0].getsockname()[1]
        with pytest.raises(OSError) as caught:
            tls_transport.listen(loop, "127.0.0.1", port, never)
        assert caught.value.strerror
        first.close()

    run(scenario)
