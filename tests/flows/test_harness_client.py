"""The harness client: one method per operation, kept in step with the served specs."""

from __future__ import annotations

import pytest

from harness.client import ApiError, ZitiClient, snake
from harness.client.operations import OPERATIONS
from harness.network.opgen import served_operations


@pytest.fixture
def ziti(ziti_app, ziti_mode, request):
    if ziti_mode == "inprocess":
        client = ZitiClient.in_process(ziti_app)
    else:
        holder, server = request.getfixturevalue("ziti_http_server")
        holder.app = ziti_app
        client = ZitiClient.connect(server.url)
    with client:
        yield client


def test_operation_table_matches_the_served_specs():
    from controller.app import create_app
    from controller.config import Config
    from harness.client.transport import inprocess

    with inprocess(create_app(Config(simulation=True))) as http:
        assert served_operations(http) == OPERATIONS, "run `python -m harness.network.opgen` to regenerate"


def test_every_operation_is_a_method(ziti):
    for api, group in (("client", ziti.edge), ("management", ziti.management)):
        for op_id in OPERATIONS[api]:
            assert callable(getattr(group, snake(op_id))), op_id


@pytest.mark.parametrize(
    "op_id, name",
    [
        ("listAPISessions", "list_api_sessions"),
        ("getIdentityPolicyAdvice", "get_identity_policy_advice"),
        ("detailMfaQrCode", "detail_mfa_qr_code"),
        ("listNetworkJWTs", "list_network_jwts"),
    ],
)
def test_method_names_are_snake_case_of_operation_ids(op_id, name):
    assert snake(op_id) == name


def test_login_create_get_and_iterate(ziti, ziti_unique):
    ziti.login("admin", "admin")
    prefix = ziti_unique("iter")
    ids = [
        ziti.management.create_identity(body={"name": f"{prefix}-{i:02d}", "type": "User", "isAdmin": False})["id"]
        for i in range(7)
    ]
    assert ziti.management.detail_identity(ids[0])["name"] == f"{prefix}-00"
    names = [
        i["name"]
        for i in ziti.management.iterate("listIdentities", page_size=3, filter=f'name contains "{prefix}" sort by name')
    ]
    assert names == [f"{prefix}-{i:02d}" for i in range(7)]


def test_non_2xx_raises_api_error_with_code_and_cause(ziti):
    ziti.login("admin", "admin")
    with pytest.raises(ApiError) as caught:
        ziti.management.create_identity(body={"name": "x", "type": "Robot", "isAdmin": False})
    assert (
        caught.value.status == 400
        and caught.value.code == "COULD_NOT_VALIDATE"
        and caught.value.cause["field"] == "type"
    )
    with pytest.raises(ApiError) as caught:
        ziti.management.detail_identity("missing")
    assert caught.value.status == 404 and caught.value.code == "NOT_FOUND" and caught.value.request_id


def test_client_logs_in_again_after_its_session_expires(ziti, ziti_clock):
    ziti.login("admin", "admin")
    first = ziti.token
    ziti_clock.advance(minutes=45)
    assert ziti.management.get_current_identity()["isDefaultAdmin"] is True
    assert ziti.token != first


def test_logout_ends_the_session(ziti):
    ziti.login("admin", "admin")
    ziti.logout()
    with pytest.raises(ApiError) as caught:
        ziti.management.get_current_identity()
    assert caught.value.status == 401


def test_wrong_number_of_path_arguments_is_a_type_error(ziti):
    with pytest.raises(TypeError):
        ziti.management.detail_identity()
