"""Hostile posture responses and date-times are 400s with a field cause, never 5xx."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from controller.app import create_app
from controller.clock import FrozenClock
from controller.model.posture_data import RESPONSE_TYPES
from harness.client import ZitiClient
from harness.client.transport import inprocess
from tests.api.test_posture_checks import BODIES as CHECK_BODIES
from tests.sizes import examples

NOW = "2025-06-01T12:00:00Z"
HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
    st.lists(st.text(max_size=8) | st.integers() | st.none(), max_size=4),
    st.dictionaries(st.text(max_size=6), st.text(max_size=6) | st.integers(), max_size=3),
)
RESPONSE_FIELDS = (
    "type",
    "version",
    "build",
    "domain",
    "macAddresses",
    "path",
    "isRunning",
    "hash",
    "signerFingerprints",
    "woken",
    "unlocked",
    "process",
    "processes",
)
ZONES = st.sampled_from(["Z", "z", "+00:00", "-01:00", "+14:00", "+23:59", "-23:59", "+24:00", "", "+0100"])


@st.composite
def date_times(draw):
    """Strings that look like RFC 3339 date-times at the edges of the calendar, plus plain junk."""
    year = draw(st.integers(0, 10000))
    year_text = draw(st.sampled_from([f"{year:04d}", str(year)]))
    month, day = draw(st.integers(0, 13)), draw(st.integers(0, 32))
    hour, minute, second = draw(st.integers(0, 25)), draw(st.integers(0, 61)), draw(st.integers(0, 61))
    fraction = draw(st.sampled_from(["", ".5", ".123", ".123456789"]))
    text = f"{year_text}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}{fraction}{draw(ZONES)}"
    return draw(st.sampled_from([text, text.lower(), text.replace("T", " ")]) | st.text(max_size=30))


@st.composite
def posture_responses(draw, check_ids):
    """A posture response of any type (or a bogus one) whose fields hold hostile values."""
    type_id = draw(st.sampled_from(RESPONSE_TYPES) | st.text(max_size=12))
    fields = draw(st.dictionaries(st.sampled_from(RESPONSE_FIELDS), HOSTILE, max_size=6))
    body = {"id": draw(st.sampled_from(check_ids) | st.text(max_size=10)), "typeId": type_id, **fields}
    for key in draw(st.sets(st.sampled_from(["id", "typeId"]), max_size=1)):
        del body[key]
    return body


@pytest.fixture(scope="module")
def world():
    """A user whose one service is guarded by a posture check of every type."""
    app = create_app(clock=FrozenClock(NOW))
    with inprocess(app) as http:
        admin = ZitiClient(http).signed_in("admin", "admin")
        user_id = admin.create("identities", {"name": "hostile-user", "type": "User", "isAdmin": False})
        admin.create(
            "authenticators",
            {"identityId": user_id, "method": "updb", "username": "hostile-user", "password": "hostile-pass"},
        )
        check_ids = [
            admin.create("posture-checks", {"name": f"hostile-{kind}", "typeId": kind, **body})
            for kind, body in CHECK_BODIES.items()
        ]
        service_id = admin.create("services", {"name": "hostile-svc", "encryptionRequired": True})
        admin.create(
            "service-policies",
            {
                "name": "hostile-sp",
                "type": "Dial",
                "semantic": "AllOf",
                "identityRoles": [f"@{user_id}"],
                "serviceRoles": [f"@{service_id}"],
                "postureCheckRoles": ["#all"],
            },
        )
        user = ZitiClient(http).signed_in("hostile-user", "hostile-pass", api="client")
        enrollment_id = admin.create(
            "enrollments", {"method": "ott", "identityId": user_id, "expiresAt": "2025-07-01T00:00:00Z"}
        )
        disable_id = admin.create("identities", {"name": "hostile-disable", "type": "User", "isAdmin": False})
        yield {
            "admin": admin,
            "user": user,
            "user_id": user_id,
            "check_ids": check_ids,
            "enrollment_id": enrollment_id,
            "disable_id": disable_id,
        }


def assert_field_error_or_ok(response, ok: int, field: str | None = None):
    assert response.status_code < 500, response.text
    assert response.status_code in (ok, 400), response.text
    if response.status_code == 400:
        cause = response.json()["error"]["cause"]
        assert cause.get("field"), response.text
        assert field is None or cause["field"] == field, response.text


SETTINGS = settings(
    max_examples=examples(120, 25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(data=st.data(), bulk=st.booleans())
@example(data=None, bulk=False)
def test_hostile_posture_responses_are_field_errors_never_5xx(world, data, bulk):
    user, check_ids = world["user"], world["check_ids"]
    if data is None:  # the reported crash: PROCESS_MULTI with no path
        body = {"id": "", "typeId": "PROCESS_MULTI"}
    else:
        body = data.draw(posture_responses(check_ids))
    response = user.edge(
        "POST", "/posture-response-bulk" if bulk else "/posture-response", json=[body] if bulk else body
    )
    assert_field_error_or_ok(response, ok=200 if bulk else 201)
    assert user.edge("GET", "/services").status_code == 200
    assert world["admin"].mgmt("GET", f"/identities/{world['user_id']}/posture-data").status_code == 200


@SETTINGS
@given(when=date_times())
@example(when="0001-01-01T00:00:00Z")
@example(when="0999-12-31T23:59:59Z")
@example(when="0001-01-01T00:00:00+01:00")
@example(when="9999-12-31T23:59:59-01:00")
def test_hostile_date_times_are_expires_at_errors_never_5xx(world, when):
    admin, user_id = world["admin"], world["user_id"]
    created = admin.mgmt(
        "POST",
        "/enrollments",
        json={"method": "updb", "identityId": user_id, "username": "hostile-enrollee", "expiresAt": when},
    )
    assert_field_error_or_ok(created, ok=201, field="expiresAt")
    if created.status_code == 201:
        admin.mgmt("DELETE", f"/enrollments/{created.json()['data']['id']}")
    refreshed = admin.mgmt("POST", f"/enrollments/{world['enrollment_id']}/refresh", json={"expiresAt": when})
    assert_field_error_or_ok(refreshed, ok=200, field="expiresAt")
    assert admin.mgmt("GET", f"/enrollments/{world['enrollment_id']}").status_code == 200
    listed = admin.mgmt("GET", "/enrollments", params={"filter": f"expiresAt < datetime({when})"})
    assert listed.status_code in (200, 400), listed.text


@SETTINGS
@given(when=date_times())
@example(when="0001-01-01T00:00:00Z")
def test_hostile_re_enroll_dates_are_expires_at_errors_never_5xx(world, when):
    admin = world["admin"]
    identity_id = admin.create(
        "identities", {"name": f"hostile-re-{abs(hash(when))}", "type": "User", "isAdmin": False}
    )
    auth_id = admin.create(
        "authenticators",
        {
            "identityId": identity_id,
            "method": "updb",
            "username": f"hostile-re-{abs(hash(when))}",
            "password": "hostile-pass",
        },
    )
    response = admin.mgmt("POST", f"/authenticators/{auth_id}/re-enroll", json={"expiresAt": when})
    assert_field_error_or_ok(response, ok=201, field="expiresAt")
    admin.mgmt("DELETE", f"/identities/{identity_id}")


@SETTINGS
@given(minutes=st.integers(-(2**64), 2**64) | st.sampled_from([10**12, 2**63, 6 * 10**9]))
def test_hostile_disable_durations_are_answered_never_5xx(world, minutes):
    admin, user_id = world["admin"], world["disable_id"]
    response = admin.mgmt("POST", f"/identities/{user_id}/disable", json={"durationMinutes": minutes})
    assert_field_error_or_ok(response, ok=200, field="durationMinutes")
    detail = admin.mgmt("GET", f"/identities/{user_id}")
    assert detail.status_code == 200, detail.text
    admin.mgmt("POST", f"/identities/{user_id}/enable")
