"""Channel V2 framing and the edge message vocabulary, as the SDKs speak it.

A frame is a 20-byte header (magic, content type, sequence, headers length,
body length; little-endian), the headers as ``{id i32, len u32, value}`` and
the body. :func:`read_message` refuses a bad magic or an oversized frame with
:class:`FrameError`, so one hostile peer only loses its own channel.
"""

from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass, field

MAGIC = b"\x03\x06\x09\x0c"
PREFIX = struct.Struct("<4siiII")
HEADER = struct.Struct("<iI")
MAX_HEADERS = 64 * 1024
#: Go SDKs send one Data message per Write, so allow large bodies; anything bigger is hostile
MAX_BODY = 16 * 1024 * 1024


class ContentType:
    HELLO, PING, RESULT, LATENCY, HEARTBEAT = 0, 1, 2, 3, 5
    CONNECT, STATE_CONNECTED, STATE_CLOSED, DATA = 60783, 60784, 60785, 60786
    DIAL, DIAL_SUCCESS, DIAL_FAILED, BIND, UNBIND = 60787, 60788, 60789, 60790, 60791
    STATE_SESSION_ENDED, PROBE, UPDATE_BIND, HEALTH_EVENT = 60792, 60793, 60794, 60795
    TRACE_ROUTE, TRACE_ROUTE_RESPONSE = 60796, 60797
    CONN_INSPECT_REQUEST, CONN_INSPECT_RESPONSE = 60798, 60799
    BIND_SUCCESS = 60800
    UPDATE_TOKEN_SUCCESS, UPDATE_TOKEN_FAILURE, UPDATE_TOKEN = 60801, 60802, 60803
    INSPECT_RESPONSE = 60805
    POSTURE_RESPONSE = 10800
    #: router-to-router link messages (this project's own, never seen by an SDK; ``router/peer_links.py``)
    LINK_ROUTE, LINK_DIALED, LINK_PAYLOAD, LINK_CLOSE, LINK_PAUSE, LINK_RESUME = 1050, 1051, 1100, 1102, 1104, 1105


class Header:
    CONNECTION_ID, REPLY_FOR, RESULT_SUCCESS, HELLO_VERSION = 0, 1, 2, 4
    ROUTER_ID = 8
    REFLECTED = 128
    UUID = 128
    CONN_ID, SEQ, SESSION_TOKEN, PUBLIC_KEY = 1000, 1001, 1002, 1003
    COST, PRECEDENCE, TERMINATOR_IDENTITY, TERMINATOR_IDENTITY_SECRET = 1004, 1005, 1006, 1007
    CALLER_ID, CRYPTO_METHOD, FLAGS, APP_DATA, ROUTER_PROVIDED_CONN_ID = 1008, 1009, 1010, 1011, 1012
    ERROR_CODE, LISTENER_ID, SUPPORTS_BIND_SUCCESS = 1014, 1021, 1024
    CONNECTION_MARKER, CIRCUIT_ID = 1025, 1026
    DIALER_IDENTITY_ID, DIALER_IDENTITY_NAME = 1034, 1035
    #: link headers (router to router only)
    LINK_ID = 2000


class Flag:
    FIN, TRACE_UUID, MULTIPART, STREAM, MULTIPART_MSG = 1, 2, 4, 8, 16


class FrameError(ValueError):
    """The peer sent something that is not a channel V2 frame we accept."""


@dataclass
class Message:
    """One channel message; header values are raw bytes."""

    content_type: int
    body: bytes = b""
    headers: dict[int, bytes] = field(default_factory=dict)
    seq: int = 0

    # -- typed headers ----------------------------------------------------------
    def int_header(self, key: int) -> int | None:
        value = self.headers.get(key)
        return int.from_bytes(value[:8], "little", signed=False) if value else None

    def str_header(self, key: int) -> str | None:
        value = self.headers.get(key)
        return value.decode("utf-8", "replace") if value is not None else None

    def bool_header(self, key: int) -> bool:
        value = self.headers.get(key)
        return bool(value and value[0])

    @property
    def conn_id(self) -> int | None:
        return self.int_header(Header.CONN_ID)

    @property
    def reply_for(self) -> int | None:
        value = self.headers.get(Header.REPLY_FOR)
        return struct.unpack("<i", value[:4])[0] if value and len(value) >= 4 else None

    def encode(self) -> bytes:
        parts = [HEADER.pack(key, len(value)) + value for key, value in self.headers.items()]
        packed = b"".join(parts)
        return PREFIX.pack(MAGIC, self.content_type, self.seq, len(packed), len(self.body)) + packed + self.body


def frame(content_type: int, headers: dict[int, bytes], body: bytes = b"", seq: int = 0) -> bytes:
    """One encoded frame, without building a :class:`Message` (the data path's fast lane)."""
    packed = b"".join([HEADER.pack(key, len(value)) + value for key, value in headers.items()])
    return PREFIX.pack(MAGIC, content_type, seq, len(packed), len(body)) + packed + body


def u32(value: int) -> bytes:
    return struct.pack("<I", value & 0xFFFFFFFF)


def i32(value: int) -> bytes:
    return struct.pack("<i", value)


def boolean(value: bool) -> bytes:
    return b"\x01" if value else b"\x00"


def parse_headers(blob: bytes) -> dict[int, bytes]:
    headers, offset = {}, 0
    while offset < len(blob):
        if offset + HEADER.size > len(blob):
            raise FrameError("truncated header")
        key, length = HEADER.unpack_from(blob, offset)
        offset += HEADER.size
        if offset + length > len(blob):
            raise FrameError(f"header {key} overruns the header block")
        headers[key] = blob[offset : offset + length]
        offset += length
    return headers


def decode(data: bytes) -> Message:
    """One whole frame from bytes (tests and tools)."""
    magic, content_type, seq, header_len, body_len = PREFIX.unpack_from(data)
    if magic != MAGIC:
        raise FrameError(f"bad magic {magic.hex()}")
    headers = parse_headers(data[PREFIX.size : PREFIX.size + header_len])
    body = data[PREFIX.size + header_len : PREFIX.size + header_len + body_len]
    return Message(content_type, body, headers, seq)


async def read_message(reader: asyncio.StreamReader, max_body: int = MAX_BODY) -> Message:
    """The next frame; ``asyncio.IncompleteReadError`` at end of stream."""
    magic, content_type, seq, header_len, body_len = PREFIX.unpack(await reader.readexactly(PREFIX.size))
    if magic != MAGIC:
        raise FrameError(f"bad magic {magic.hex()}")
    if header_len > MAX_HEADERS or body_len > max_body:
        raise FrameError(f"oversized frame (headers {header_len}, body {body_len} bytes)")
    payload = await reader.readexactly(header_len + body_len)
    return Message(content_type, payload[header_len:], parse_headers(payload[:header_len]), seq)
