"""The served OpenAPI documents list every status an operation answers with."""

from __future__ import annotations

import re

import pytest

from controller.api.openapi import SPEC_IDS
from controller.api.operations import PREFIXES
from controller.app import create_app

ROUTES = [(api, op) for op in create_app().routes for api in op.apis]
#: request shapes sent to every operation (path ids are always unknown)
PROBES = {
    "anonymous": {"json": {}},
    "admin, empty body": {"json": {}},
    "admin, garbage body": {"content": b"{not json", "headers": {"content-type": "application/json"}},
    "admin, wrong content type": {"content": b"x", "headers": {"content-type": "image/png"}},
}


@pytest.fixture
def documented(ziti):
    """``(api, operationId) -> set of documented statuses``, read from the served documents."""
    out = {}
    for name in SPEC_IDS:
        document = ziti.request("GET", f"{PREFIXES[name]}/swagger.json").json()
        for entry in document["paths"].values():
            for operation in entry.values():
                out[name, operation["operationId"]] = {int(code) for code in operation["responses"]}
    return out


@pytest.mark.parametrize("probe", sorted(PROBES))
def test_every_answer_is_a_documented_status(ziti, ziti_admin, documented, probe):
    undocumented = []
    for api_name, op in ROUTES:
        if op.op_id in ("deleteCurrentApiSession",) or "simulation" in op.path:
            continue  # ending the admin's own session would end the probe
        client = ziti if probe == "anonymous" else ziti_admin
        path = PREFIXES[api_name] + re.sub(r"{\w+}", "nope", op.path)
        response = client.request(op.method, path, **PROBES[probe])
        assert response.status_code < 500, (op.op_id, response.text)
        if response.status_code not in documented[api_name, op.op_id]:
            undocumented.append((api_name, op.op_id, response.status_code))
    assert not undocumented
