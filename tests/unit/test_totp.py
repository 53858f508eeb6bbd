"""The one TOTP algorithm (controller and harness devices) against RFC 6238's published vectors."""

from __future__ import annotations

import base64
from datetime import datetime, timezone

import pytest

from controller.auth.totp import code_at, verify_totp
from harness.flows import TotpDevice

# RFC 6238 Appendix B, SHA-1, secret "12345678901234567890": the last 6 of its 8-digit codes
SECRET = base64.b32encode(b"12345678901234567890").decode("ascii")
VECTORS = [
    (59, "287082"),
    (1111111109, "081804"),
    (1111111111, "050471"),
    (1234567890, "005924"),
    (2000000000, "279037"),
    (20000000000, "353130"),
]


@pytest.mark.parametrize("epoch, expected", VECTORS)
def test_codes_are_rfc_6238(epoch, expected):
    when = datetime.fromtimestamp(epoch, timezone.utc)
    assert code_at(SECRET, when) == expected
    assert TotpDevice(SECRET, []).code(when) == TotpDevice(SECRET, []).code(float(epoch)) == expected


def test_verification_accepts_two_steps_either_side_only():
    when = datetime.fromtimestamp(1111111109, timezone.utc)
    for steps, accepted in ((-3, False), (-2, True), (0, True), (2, True), (3, False)):
        shown = code_at(SECRET, datetime.fromtimestamp(1111111109 + 30 * steps, timezone.utc))
        assert verify_totp(SECRET, shown, when) is accepted, steps
