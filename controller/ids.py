"""Identifiers in the real controller's styles."""

from __future__ import annotations

import os
import random
import secrets
import threading
import time
import uuid

SHORT_ID_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-"
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
#: byte -> the short-id symbol of its low 6 bits (64 symbols: a byte masked to 6 bits picks one without bias)
_SIX_BITS = bytes(ord(SHORT_ID_ALPHABET[byte & 63]) for byte in range(256))


def uuid4_text(random16: bytes) -> str:
    """``str(uuid.UUID(bytes=random16, version=4))`` without the UUID object (a third of its cost).

    The version (4) and RFC 4122 variant (``10``) bits are set over the 16 random bytes, written as
    lowercase hex in 8-4-4-4-12 groups.
    """
    raw = bytearray(random16)
    raw[6] = raw[6] & 0x0F | 0x40
    raw[8] = raw[8] & 0x3F | 0x80
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _base36(value: int, width: int) -> str:
    out = []
    while value:
        value, rem = divmod(value, 36)
        out.append(_BASE36[rem])
    text = "".join(reversed(out)) or "0"
    return text.rjust(width, "0")[-width:]


class Ids:
    """Generator of short ids, cuids and UUIDs. Inject a seeded one in tests."""

    def __init__(self, seed: int | None = None):
        self._seeded = seed is not None
        self._rand = random.Random(seed) if self._seeded else secrets.SystemRandom()
        self._counter = 0
        self._lock = threading.Lock()
        self._fingerprint = _base36(os.getpid() * 31 + int(self._rand.random() * 1e6), 4)
        #: request ids: a fast generator seeded once from the OS (they name a request in logs, they guard nothing)
        self._request_rand = None if self._seeded else random.Random(os.urandom(32))

    def short(self) -> str:
        """A short id like ``g7cIWbcGg``: 9 characters over ``0-9a-zA-Z.-``.

        The first character is alphanumeric so ids never look like options or roles.
        """
        raw = self._random_bytes(9)
        return SHORT_ID_ALPHABET[raw[0] % 62] + raw[1:].translate(_SIX_BITS).decode("ascii")

    def request_id(self) -> str:
        """A short id naming one request (``requestId``): no system call per request."""
        if self._request_rand is None:  # seeded: the same sequence as ever
            return self.short()
        bits = self._request_rand.getrandbits(54)  # nine symbols of six bits
        symbols = [SHORT_ID_ALPHABET[(bits >> shift) & 63] for shift in range(6, 54, 6)]
        return SHORT_ID_ALPHABET[bits % 62] + "".join(symbols)

    def _random_bytes(self, count: int) -> bytes:
        if self._seeded:
            return bytes(self._rand.getrandbits(8) for _ in range(count))
        return os.urandom(count)

    def cuid(self) -> str:
        """A 25-character cuid starting with ``c``."""
        with self._lock:
            self._counter = (self._counter + 1) % (36**4)
            counter = self._counter
        stamp = _base36(int(time.time() * 1000), 8)
        rand = _base36(self._rand.getrandbits(64), 8)
        return "c" + stamp + _base36(counter, 4) + self._fingerprint + rand

    def uuid(self) -> str:
        """A UUIDv4 string (122 random bits from the OS; from the seed when seeded)."""
        if not self._seeded:
            return uuid4_text(os.urandom(16))
        return str(uuid.UUID(int=self._rand.getrandbits(128), version=4))

    def token(self, nbytes: int = 32) -> str:
        """An unguessable secret token (always from the OS, even when seeded)."""
        return secrets.token_urlsafe(nbytes)
