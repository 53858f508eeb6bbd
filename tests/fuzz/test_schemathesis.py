"""A bounded schemathesis run against the served OpenAPI documents (and any given as files): no 5xx.

Opt-in and slow: ``python -m pytest tests/fuzz -m fuzz``. ``ZITI_FUZZ_SPECS`` adds documents by
path (comma-separated), e.g. the official ``openziti-edge-client.yml`` and
``openziti-edge-management.yml`` of openziti/edge-api; ``ZITI_FUZZ_EXAMPLES`` sets the examples per
operation (default 5).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import httpx
import pytest
import yaml
from hypothesis import HealthCheck, given, settings

from controller.api.openapi import SPEC_IDS
from controller.api.operations import PREFIXES
from controller.app import create_app

schemathesis = pytest.importorskip("schemathesis")
pytestmark = pytest.mark.fuzz

EXAMPLES = int(os.environ.get("ZITI_FUZZ_EXAMPLES", "5"))
EXTRA = [Path(p) for p in os.environ.get("ZITI_FUZZ_SPECS", "").split(",") if p.strip()]
#: operations that end the fuzzer's own session or change its password; they are fuzzed anonymously
SELF_HARM = {"deleteCurrentApiSession", "updateCurrentIdentityAuthenticator", "patchCurrentIdentityAuthenticator"}


@pytest.fixture(scope="module")
def server(ziti_http_server):
    holder, threaded = ziti_http_server
    holder.app = create_app()
    yield threaded.url
    holder.app.controller.close()


def _documents(base_url: str) -> list[tuple[str, dict]]:
    served = [(f"served {name}", httpx.get(f"{base_url}{PREFIXES[name]}/swagger.json").json()) for name in SPEC_IDS]
    return served + [(path.name, yaml.safe_load(path.read_text())) for path in EXTRA]


def _token(base_url: str) -> str:
    response = httpx.post(
        f"{base_url}/edge/management/v1/authenticate",
        params={"method": "password"},
        json={"username": "admin", "password": "admin"},
    )
    return response.json()["data"]["token"]


def _fuzz(operation, base_url: str, token: str | None, failures: list, statuses: Counter) -> None:
    @settings(
        max_examples=EXAMPLES, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    @given(case=operation.as_strategy())
    def run(case):
        headers = {"zt-session": token} if token else {}
        response = case.call(base_url=base_url, headers=headers, timeout=30)
        statuses[response.status_code] += 1
        if response.status_code >= 500:
            failures.append((operation.label, response.status_code, case.as_curl_command(headers)))

    run()


def test_no_operation_answers_5xx(server):
    failures: list = []
    statuses: Counter = Counter()
    operations = 0
    for _title, raw in _documents(server):
        raw = {key: value for key, value in raw.items() if key != "host"} | {"schemes": ["http"]}
        schema = schemathesis.openapi.from_dict(raw)
        base_url = server + (raw.get("basePath") or "")
        for result in schema.get_all_operations():
            operation = result.ok()
            token = None if operation.definition.raw.get("operationId") in SELF_HARM else _token(server)
            _fuzz(operation, base_url, token, failures, statuses)
            operations += 1
    print(f"fuzzed {operations} operations with {sum(statuses.values())} requests: {dict(sorted(statuses.items()))}")
    assert sum(statuses.values()) >= operations  # every operation was called at least once
    assert not failures, "\n".join(f"{label}: {status}\n  {curl}" for label, status, curl in failures[:20])
