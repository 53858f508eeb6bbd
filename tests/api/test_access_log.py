"""The access log: one line per request, who asked, never a secret."""

from __future__ import annotations

import logging
import re
import threading

import pytest

from controller.api import access_log
from controller.app import create_app
from harness.client import ApiError, ZitiClient

LINE = re.compile(r"^(GET|POST|PUT|PATCH|DELETE) (/\S+) (\d{3}) \d+\.\dms (.+) rid=(\S+)$")


@pytest.fixture
def logged(caplog):
    caplog.set_level(logging.INFO, logger="controller.access")
    app = create_app()
    with ZitiClient.in_process(app) as client:
        yield client, caplog
    app.controller.close()


def _lines(caplog) -> list[str]:
    assert access_log.flush()
    return [r.getMessage() for r in caplog.records if r.name == "controller.access"]


def test_each_request_logs_method_path_status_identity_and_request_id(logged):
    client, caplog = logged
    client.login("admin", "admin")
    client.management.list_identities()
    with pytest.raises(ApiError) as raised:
        client.management.detail_identity("missing")
    lines = _lines(caplog)
    assert len(lines) == 3
    parsed = [LINE.match(line).groups() for line in lines]
    assert parsed[0][:4] == ("POST", "/edge/management/v1/authenticate", "200", "anonymous")
    assert parsed[1][:4] == ("GET", "/edge/management/v1/identities", "200", "Default Admin")
    assert parsed[2][:4] == ("GET", "/edge/management/v1/identities/missing", "404", "Default Admin")
    assert parsed[2][4] == raised.value.request_id


def test_tokens_passwords_and_one_time_tokens_never_reach_the_log(logged):
    client, caplog = logged
    login = client.login("admin", "admin")
    created = client.management.create_identity(
        body={"name": "log-dev", "type": "Device", "isAdmin": False, "enrollment": {"ott": True}}
    )
    ott = client.management.detail_identity(created["id"])["enrollment"]["ott"]
    client.management.create_authenticator(
        body={"identityId": created["id"], "method": "updb", "username": "log-user", "password": "s3cret-Passw0rd"}
    )
    client.http.post(
        "/edge/client/v1/enroll",
        params={"token": ott["token"]},
        content=b"not a csr",
        headers={"content-type": "application/x-pem-file"},
    )
    text = "\n".join(_lines(caplog))
    assert text.count("\n") >= 4
    for secret in (login["token"], "s3cret-Passw0rd", ott["token"], ott["jwt"]):
        assert secret not in text
    assert "/edge/client/v1/enroll " in text  # the path, never the query string


def test_nothing_is_formatted_below_info(caplog):
    caplog.set_level(logging.WARNING, logger="controller.access")
    app = create_app()
    with ZitiClient.in_process(app) as client:
        client.login("admin", "admin")
    assert _lines(caplog) == []
    app.controller.close()


def test_lines_keep_the_order_of_the_requests(logged):
    client, caplog = logged
    client.login("admin", "admin")
    for number in range(40):
        client.http.get(f"/edge/management/v1/identities/missing-{number}")
    paths = [LINE.match(line).group(2) for line in _lines(caplog)][1:]
    assert paths == [f"/edge/management/v1/identities/missing-{number}" for number in range(40)]


class _StuckHandler(logging.Handler):
    """A log sink that blocks every write until released (a full pipe, a slow disk)."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.unblock = threading.Event()
        self.lines: list[str] = []

    def emit(self, record):
        self.unblock.wait(30)
        self.lines.append(record.getMessage())


def test_a_request_is_answered_while_the_log_sink_is_stuck_and_its_line_follows(caplog):
    caplog.set_level(logging.INFO, logger="controller.access")
    stuck = _StuckHandler()
    logging.getLogger("controller.access").addHandler(stuck)
    app = create_app()
    answered = []
    try:
        with ZitiClient.in_process(app) as client:
            asking = threading.Thread(
                target=lambda: answered.append(client.http.get("/edge/client/v1/version").status_code)
            )
            asking.start()
            asking.join(20)
            was_answered = list(answered)
            stuck.unblock.set()
            asking.join(20)
        assert was_answered == [200]
        assert access_log.flush()
        assert [LINE.match(line).group(1, 2, 3) for line in stuck.lines] == [("GET", "/edge/client/v1/version", "200")]
    finally:
        stuck.unblock.set()
        logging.getLogger("controller.access").removeHandler(stuck)
        app.controller.close()
