"""The error catalogue: one declaration per code, statuses derived from it, no bare codes in the controller."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from controller import errors
from controller.api.status import status_of
from controller.simulation import FaultInjector, InjectedError

CONTROLLER = Path(errors.__file__).parent


def test_every_entry_is_upper_snake_with_an_error_status_and_a_message():
    for code, entry in errors.CATALOGUE.items():
        assert entry.code == code and re.fullmatch(r"[A-Z][A-Za-z0-9_]+", code)
        assert 400 <= entry.status <= 599 and entry.message
        assert getattr(errors, code.upper()) == code


@pytest.mark.parametrize(
    "error, status",
    [
        (errors.NotFound("identity", "x"), 404),
        (errors.BadRequest(errors.ENROLLMENT_EXPIRED), 400),
        (errors.Conflict(errors.INVALID_POSTURE), 409),
        (errors.Conflict(), 409),
        (errors.Unauthorized(), 401),
        (errors.Unavailable(), 503),
        (errors.ControllerError(errors.UNHANDLED), 500),
        # a bare string that is in the catalogue keeps working (code written before the constants)
        (errors.BadRequest("MFA_EXISTS"), 409),
    ],
)
def test_the_status_comes_from_the_catalogue(error, status):
    assert status_of(error) == status == errors.CATALOGUE[error.code].status


def test_a_code_outside_the_catalogue_falls_back_to_the_class():
    assert status_of(errors.Conflict("SOMETHING_NEW")) == 409
    assert status_of(errors.BadRequest("SOMETHING_NEW")) == 400
    assert status_of(errors.ControllerError("SOMETHING_NEW")) == 500
    assert errors.message_for("SOMETHING_NEW") == "Something new"


def test_messages_come_from_the_catalogue_unless_given():
    assert errors.NotFound().message == errors.CATALOGUE[errors.NOT_FOUND].message
    assert errors.NotFound(message="gone").message == "gone"


@pytest.mark.parametrize(
    "status, code",
    [
        (429, errors.RATE_LIMITED),
        (503, errors.TIMEOUT),
        (400, errors.COULD_NOT_VALIDATE),
        (401, errors.UNAUTHORIZED),
        (500, errors.UNHANDLED),
    ],
)
def test_an_injected_fault_carries_the_default_code_of_its_status(status, code):
    faults = FaultInjector(ids=type("Ids", (), {"short": staticmethod(lambda: "f1")})())
    faults.add(status=status)
    with pytest.raises(InjectedError) as caught:
        faults.apply("GET", "/edge/client/v1/version")
    assert caught.value.code == code and status_of(caught.value) == status
    assert not hasattr(caught.value, "status")


def test_a_fault_status_without_a_code_is_refused():
    faults = FaultInjector(ids=None)
    with pytest.raises(errors.FieldError) as caught:
        faults.add(status=418)
    assert caught.value.field == "status"


def test_the_controller_raises_codes_through_the_constants():
    quoted = re.compile(r"[\"'](" + "|".join(map(re.escape, errors.CATALOGUE)) + r")[\"']")
    bare = [
        f"{path.relative_to(CONTROLLER.parent)}:{number}: {line.strip()}"
        for path in sorted(CONTROLLER.rglob("*.py"))
        if path.name != "errors.py" or path.parent != CONTROLLER
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if quoted.search(line)
    ]
    assert not bare, "use the controller.errors constants:\n" + "\n".join(bare)
