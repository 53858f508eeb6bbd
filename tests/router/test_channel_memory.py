"""What an SDK channel keeps once its hello is done: not the stream pair that read the hello (10,000 channels on
one router make every object per channel count)."""

from __future__ import annotations

import gc
import weakref

from router import tls_transport
from router.wire import ContentType as CT
from router.wire import Header, Message
from tests.router.raw import RawChannel


def test_the_hello_reader_and_its_protocol_are_freed_once_frames_flow(ziti_quickstart, monkeypatch):
    made: list = []
    real_start = tls_transport._start

    async def remembering_start(*args, **kwargs):
        reader, writer = await real_start(*args, **kwargs)
        made.append((weakref.ref(reader), weakref.ref(writer.transport.get_protocol())))
        return reader, writer

    monkeypatch.setattr(tls_transport, "_start", remembering_start)
    with RawChannel(ziti_quickstart.router_url, ziti_quickstart.dialer) as channel:
        assert channel.hello().bool_header(Header.RESULT_SUCCESS)
        probe = channel.send(Message(CT.LATENCY, b"", {Header.REFLECTED: b"\0" * 8}))
        assert channel.recv().reply_for == probe.seq  # the frame loop answers: the channel is open and served
        gc.collect()
        assert len(made) == 1
        reader, protocol = made[0]
        assert (reader(), protocol()) == (None, None)
        channel.send(Message(CT.LATENCY, b"", {Header.REFLECTED: b"\0" * 8}))
        assert channel.recv().content_type == CT.RESULT  # and it still is
