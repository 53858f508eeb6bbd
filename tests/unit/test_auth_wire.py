"""The authenticate body becomes domain arguments, and ``authQueries`` are rendered, only at the API edge."""

from __future__ import annotations

import ast
from pathlib import Path

import controller
from controller.api.auth_wire import auth_request, legacy_queries, oidc_queries
from controller.auth.request import Pending

DOMAIN = ("auth", "enroll", "model", "oidc", "policy", "store", "pki", "ops")


def test_the_body_keys_are_folded_and_split_into_credentials_and_client_details():
    request = auth_request(
        "password",
        {"UserName": "u", "PASSWORD": "p", "configtypes": ["all"], "SdkInfo": {"v": 1}, "envInfo": {}, "other": 1},
        peer_certs=[],
        remote_address="127.0.0.1",
    )
    assert request.body == {"username": "u", "password": "p"}
    assert (request.config_types, request.sdk_info, request.env_info) == (["all"], {"v": 1}, {})
    assert request.peer_certs == () and request.remote_address == "127.0.0.1"


def test_a_body_that_is_not_an_object_carries_nothing():
    request = auth_request("cert", ["not", "an", "object"])
    assert request.body == {} and request.config_types is None


def test_pending_factors_render_as_the_legacy_and_the_oidc_queries():
    signer = {"id": "s1", "external_auth_url": "https://idp", "client_id": "c", "scopes": None}
    pending = Pending(totp=True, ext_jwt=[signer])
    legacy, oidc = legacy_queries(pending), oidc_queries(pending, totp_enrolled=True)
    assert [q["typeId"] for q in legacy] == ["MFA", "EXT-JWT"] and [q["typeId"] for q in oidc] == ["TOTP", "EXT-JWT"]
    assert oidc[0]["isTotpEnrolled"] is True and "isTotpEnrolled" not in oidc_queries(pending, False)[0]
    assert legacy[1] == {
        "typeId": "EXT-JWT",
        "provider": "url",
        "httpUrl": "https://idp",
        "clientId": "c",
        "scopes": [],
        "id": "s1",
    }


def test_no_domain_module_reads_the_wire_body_keys_or_spells_an_auth_query():
    wire = {"configTypes", "sdkInfo", "envInfo", "EXT-JWT", "./authenticate/mfa", "./oidc/login/totp"}
    root = Path(controller.__file__).parent
    found = {
        (path.relative_to(root).as_posix(), node.value)
        for package in DOMAIN
        for path in (root / package).rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and node.value in wire
    }
    assert found == set()
