"""Control channel framing, declared once in :mod:`protocol` (both sides use it): a 4-byte big-endian length, then
that many bytes of one UTF-8 JSON object with a string ``type``. :func:`read_frame` refuses an empty or oversized
frame, bytes that are not JSON and JSON that is not such an object with :class:`FrameError`, so one hostile peer
loses only its own connection."""

from __future__ import annotations

from protocol import LENGTH, MAX_FRAME, FrameError, encode, read_frame

__all__ = ["LENGTH", "MAX_FRAME", "FrameError", "encode", "read_frame"]
