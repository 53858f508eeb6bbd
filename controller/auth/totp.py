"""TOTP second factor as the real controller does it (dgoogauth behaviour).

RFC 6238 with HMAC-SHA1, 6 digits, 30 s steps and a window of two steps either
side, no replay protection. Secrets are base32 of 10 random bytes. Recovery
codes are the first 6 characters of base32 of 8 random bytes, 20 at a time.
The QR code is a 256x256 PNG with medium error correction, like go-qrcode.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import struct
import zlib
from datetime import datetime
from urllib.parse import urlencode

import segno

DIGITS = 6
STEP_SECONDS = 30
WINDOW = 2
RECOVERY_CODE_COUNT = 20
QR_SIZE = 256
QR_BORDER = 4


def new_secret() -> str:
    """16 upper-case base32 characters (10 random bytes)."""
    return base64.b32encode(os.urandom(10)).decode("ascii")


def new_recovery_codes() -> list[str]:
    return [base64.b32encode(os.urandom(8)).decode("ascii")[:6] for _ in range(RECOVERY_CODE_COUNT)]


def provisioning_url(issuer: str, account: str, secret: str) -> str:
    """``otpauth://totp/<issuer>:<account>?issuer=..&secret=..``: query sorted and encoded, label not escaped."""
    query = urlencode(sorted({"issuer": issuer, "secret": secret}.items()))
    return f"otpauth://totp/{issuer}:{account}?{query}"


def looks_like_totp(code: str) -> bool:
    """dgoogauth treats only 6 characters starting with a digit as a TOTP code."""
    return isinstance(code, str) and len(code) == DIGITS and code.isdigit()


def verify_totp(secret: str, code: str, now: datetime) -> bool:
    """True when ``code`` is the TOTP of ``secret`` within two steps of ``now``."""
    if not looks_like_totp(code) or not secret:
        return False
    key = _key(secret)
    step = int(now.timestamp()) // STEP_SECONDS
    return any(hmac.compare_digest(code, _hotp(key, step + offset)) for offset in range(-WINDOW, WINDOW + 1))


def code_at(secret: str, when: datetime) -> str:
    """The TOTP code of ``secret`` at ``when`` (what an authenticator app shows; the harness's devices use it)."""
    return _hotp(_key(secret), int(when.timestamp()) // STEP_SECONDS)


def _key(secret: str) -> bytes:
    # NOTE: RFC 4226 is done here (a few lines); the harness's devices use pyotp, an independent
    # implementation (its default 112-bit minimum is lowered there for the real controller's 80-bit secrets).
    padded = secret.upper() + "=" * (-len(secret) % 8)
    return base64.b32decode(padded)


def _hotp(key: bytes, counter: int) -> str:
    digest = hmac.new(key, struct.pack(">Q", counter), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    value = struct.unpack(">I", digest[offset : offset + 4])[0] & 0x7FFFFFFF
    return str(value % 10**DIGITS).zfill(DIGITS)


def match_recovery_code(codes: list[str], code: str) -> int | None:
    """Index of ``code`` in ``codes`` (exact compare), or None."""
    if not isinstance(code, str) or not code:
        return None
    for index, candidate in enumerate(codes):
        if hmac.compare_digest(candidate.encode(), code.encode()):
            return index
    return None


# -- QR code ---------------------------------------------------------------


def qr_png(text: str, size: int = QR_SIZE) -> bytes:
    """A ``size`` x ``size`` grayscale PNG of ``text`` as a QR code (medium error correction).

    Like go-qrcode: whole pixels per module, the symbol centred on white.
    """
    qr = segno.make(text, error="m", boost_error=False, micro=False)
    rows = [list(row) for row in qr.matrix_iter(scale=1, border=QR_BORDER)]
    modules = len(rows)
    scale = max(1, size // modules)
    offset = (size - modules * scale) // 2
    white = b"\xff" * size
    lines = []
    for y in range(size):
        my = (y - offset) // scale
        if y < offset or my >= modules:
            lines.append(white)
            continue
        row = bytearray(white)
        for mx, dark in enumerate(rows[my]):
            if dark:
                start = offset + mx * scale
                row[start : start + scale] = b"\x00" * scale
        lines.append(bytes(row))
    return _png_gray(size, size, lines)


def _png_gray(width: int, height: int, lines: list[bytes]) -> bytes:
    raw = b"".join(b"\x00" + line for line in lines)  # filter type 0 per scanline

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
