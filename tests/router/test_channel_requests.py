"""A channel's requests: the reply is awaited with one timer, and a request given up leaves nothing waiting."""

from __future__ import annotations

import asyncio
import socket

import pytest

from router.channel import Channel
from router.wire import ContentType as CT
from router.wire import Message


async def stalled_channel() -> tuple[Channel, socket.socket]:
    """A channel whose peer never reads, its write buffer past the high-water mark (a drain waits)."""
    ours, theirs = socket.socketpair()
    reader, writer = await asyncio.open_connection(sock=ours)
    channel = Channel(reader, writer)
    channel.transport.write(b"x" * 8 * 2**20)
    return channel, theirs


def test_a_request_cancelled_while_the_peer_is_slow_to_read_leaves_no_waiter():
    async def run():
        channel, peer = await stalled_channel()
        try:
            asking = asyncio.ensure_future(channel.request(Message(CT.PING, b""), 5.0))
            await asyncio.sleep(0.05)
            assert not asking.done() and len(channel._waiters) == 1  # waiting for room to write
            asking.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asking
            assert channel._waiters == {}
        finally:
            channel.transport.abort()
            peer.close()

    asyncio.run(run())


def test_a_reply_that_never_comes_times_out_and_leaves_no_waiter():
    async def run():
        ours, peer = socket.socketpair()
        reader, writer = await asyncio.open_connection(sock=ours)
        channel = Channel(reader, writer)
        try:
            with pytest.raises(asyncio.TimeoutError):
                await channel.request(Message(CT.PING, b""), 0.05)
            assert channel._waiters == {}
        finally:
            channel.transport.abort()
            peer.close()

    asyncio.run(run())
