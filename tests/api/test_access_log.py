"""The access log: one line per request, who asked, never a secret."""

from __future__ import annotations

import logging
import re

import pytest

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
