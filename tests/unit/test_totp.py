"""TOTP: the controller's and the harness devices' (pyotp, an independent implementation) against RFC 6238's vectors."""

from __future__ import annotations

import base64
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.auth.totp import code_at, new_secret, verify_totp
from harness.dataplane.flows import TotpDevice

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


@settings(max_examples=200, deadline=None)
@given(key=st.binary(min_size=10, max_size=10), epoch=st.integers(min_value=0, max_value=2**34))
def test_the_controller_and_pyotp_agree_on_80_bit_secrets_the_controller_issues(key, epoch):
    secret = base64.b32encode(key).decode("ascii")
    when = datetime.fromtimestamp(epoch, timezone.utc)
    assert TotpDevice(secret, []).code(when) == code_at(secret, when)


def test_issued_secrets_are_80_bits_and_a_device_accepts_them():
    secret = new_secret()
    assert len(base64.b32decode(secret + "=" * (-len(secret) % 8))) * 8 == 80
    when = datetime.fromtimestamp(1111111109, timezone.utc)
    assert verify_totp(secret, TotpDevice(secret, []).code(when), when)
