"""Channel V2 framing: what is encoded decodes back; bad frames are refused before buffering."""

from __future__ import annotations

import asyncio
import re
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from router.wire import MAGIC, MAX_BODY, PREFIX, FrameError, Message, decode, i32, read_message

header_maps = st.dictionaries(st.integers(-(2**31), 2**31 - 1), st.binary(max_size=64), max_size=8)


@given(st.integers(0, 2**31 - 1), st.integers(-(2**31), 2**31 - 1), header_maps, st.binary(max_size=2048))
def test_every_message_decodes_to_itself(content_type, seq, headers, body):
    message = Message(content_type, body, headers, seq)
    assert decode(message.encode()) == message


def test_the_layout_is_little_endian_magic_type_seq_lengths_headers_body():
    encoded = Message(2, b"ok", {1: i32(7)}, seq=-1).encode()
    assert encoded[:4] == MAGIC == bytes([3, 6, 9, 12])
    assert struct.unpack("<iiII", encoded[4:20]) == (2, -1, 12, 2)
    assert encoded[20:] == struct.pack("<iI", 1, 4) + struct.pack("<i", 7) + b"ok"


def test_reply_for_reads_a_signed_sequence():
    assert Message(2, headers={1: i32(-1)}).reply_for == -1


def read(data: bytes) -> Message:
    async def go():
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        return await read_message(reader)

    return asyncio.run(go())


@pytest.mark.parametrize(
    "frame, reason",
    [
        (b"\x03\x06\x09\x0d" + bytes(16), "bad magic"),
        (PREFIX.pack(MAGIC, 0, 1, 0, MAX_BODY + 1), "oversized"),
        (PREFIX.pack(MAGIC, 0, 1, 8, 0) + struct.pack("<iI", 1002, 999), "overruns"),
    ],
)
def test_bad_frames_are_refused(frame, reason):
    with pytest.raises(FrameError, match=reason):
        read(frame)


def test_a_frame_cut_short_is_end_of_stream():
    with pytest.raises(asyncio.IncompleteReadError):
        read(PREFIX.pack(MAGIC, 0, 1, 6, 0) + b"\x01\x00")


def test_nothing_in_the_controller_imports_the_router_but_the_composition_root():
    root = Path(__file__).resolve().parents[2] / "controller"
    importers = {
        path.relative_to(root).as_posix()
        for path in root.rglob("*.py")
        if re.search(r"^\s*(from router\b|import router\b)", path.read_text(), flags=re.M)
    }
    assert importers <= {"server/serve.py"}
