"""Posture rules as pure functions: version ranges, MAC normalisation, MFA timeouts."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from controller.policy.posture import evaluate, normalize_mac, parse_range, satisfies

NOW = datetime(2025, 6, 1, 12, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "version, range_text, expected",
    [
        ("10.0.19045", ">=10.0.19041", True),
        ("10.0.19000", ">=10.0.19041", False),
        ("10.0.19045", ">=10.0.0 <11.0.0", True),
        ("11.2", ">=10.0.0 <11.0.0 || >=11.2.0", True),
        ("5.4.0-generic", "5.4.0", True),
        ("5.9", "5.x", True),
        ("6.1", "5.x", False),
        ("banana", ">=1.0.0", False),
        pytest.param("1" + "0" * 5000, ">=10.0.0", False, id="more-digits-than-int-converts"),
    ],
)
def test_version_ranges(version, range_text, expected):
    assert satisfies(version, range_text) is expected


@pytest.mark.parametrize("bad", ["", ">=banana", ">>1.0.0", "1.0.0 ||"])
def test_bad_ranges_are_rejected(bad):
    with pytest.raises(ValueError):
        parse_range(bad)


def test_mac_addresses_are_compared_without_separators_or_case():
    assert normalize_mac("AA:BB-cc.DD:ee:FF") == "aabbccddeeff"


def test_mfa_check_times_out_after_its_timeout():
    check = {"id": "c", "type_id": "MFA", "timeout_seconds": 60, "prompt_on_wake": True}
    session = {"id": "s", "is_mfa_complete": True, "updated_at": "2025-06-01T11:59:30.000Z"}
    result = evaluate(check, {}, session, {}, NOW)
    assert result.passing and result.timeout == 60 and result.remaining == 30 and result.timeout_at
    assert not evaluate(check, {}, session, {}, NOW + timedelta(seconds=31)).passing
    woken = {"woken_at": "2025-06-01T11:59:50.000Z"}
    assert evaluate(check, {}, session, woken, NOW).passing
    assert not evaluate({**check, "timeout_seconds": -1}, {}, session, woken, NOW + timedelta(minutes=6)).passing
    assert not evaluate(check, {}, {**session, "is_mfa_complete": False}, {}, NOW).passing


@pytest.mark.parametrize("timeout", [10**12, 2**62, 2**70])
def test_an_mfa_timeout_past_the_calendar_never_expires(timeout):
    check = {"id": "c", "type_id": "MFA", "timeout_seconds": timeout}
    session = {"id": "s", "is_mfa_complete": True, "updated_at": "2025-06-01T11:59:30.000Z"}
    result = evaluate(check, {}, session, {}, NOW)
    assert result.passing and result.timeout_at.startswith("9999-12-31T23:59:59")
