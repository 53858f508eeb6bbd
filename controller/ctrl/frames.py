"""Control channel framing: a 4-byte big-endian length, then that many bytes of one UTF-8 JSON object.

:func:`read_frame` refuses an empty or oversized frame, bytes that are not JSON and JSON that is
not an object with a string ``type`` with :class:`FrameError`, so one hostile peer loses only its
own connection.
"""

from __future__ import annotations

import asyncio
import struct

import orjson

LENGTH = struct.Struct(">I")
#: a trusted-CA bundle with a few hundred CAs fits; anything bigger is hostile
MAX_FRAME = 4 * 1024 * 1024


class FrameError(ValueError):
    """The peer sent something that is not a control channel frame."""


def encode(message: dict) -> bytes:
    body = orjson.dumps(message)
    return LENGTH.pack(len(body)) + body


async def read_frame(reader: asyncio.StreamReader) -> dict:
    """The next message; ``asyncio.IncompleteReadError`` at end of stream."""
    (length,) = LENGTH.unpack(await reader.readexactly(LENGTH.size))
    if not 0 < length <= MAX_FRAME:
        raise FrameError(f"frame length {length} outside 1..{MAX_FRAME}")
    body = await reader.readexactly(length)
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise FrameError("frame is not JSON") from None
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise FrameError("frame is not an object with a string type")
    return message
