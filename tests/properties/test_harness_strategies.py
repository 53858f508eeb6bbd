"""The harness's strategies produce valid input, and the state machine agrees with its model."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis.stateful import run_state_machine_as_test

from controller.app import create_app
from harness.client import ZitiClient
from harness.network import Network
from harness.testing.machines import IdentityMachine
from harness.testing.strategies import identities, networks, role_attributes, role_expressions
from tests.sizes import examples

SETTINGS = settings(max_examples=examples(40, 15), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(body=identities())
def test_identity_bodies_are_accepted(body):
    app = create_app()
    with ZitiClient.in_process(app) as client:
        client.login("admin", "admin")
        created = client.management.create_identity(body=body)
        assert client.management.detail_identity(created["id"])["roleAttributes"] == body["roleAttributes"]
    app.controller.close()


@SETTINGS
@given(attrs=role_attributes(min_size=1, max_size=3))
def test_role_attributes_never_start_with_hash_or_at(attrs):
    assert attrs and not any(a.startswith(("#", "@")) for a in attrs)


@SETTINGS
@given(roles=role_expressions(role_attributes(min_size=1, max_size=1).map(lambda a: a[0])))
def test_role_expressions_keep_all_alone(roles):
    assert roles == ["#all"] or "#all" not in roles
    assert all(role.startswith(("#", "@")) for role in roles)


@SETTINGS
@given(network=networks(max_size=4))
def test_networks_are_well_formed(network):
    loaded = Network.from_dict(network)
    names = set(loaded.names("identities"))
    for policy in network["servicePolicies"]:
        assert all(role[1:] in names for role in policy["identityRoles"] if role.startswith("@"))


def test_identity_machine_agrees_with_its_model():
    run_state_machine_as_test(
        IdentityMachine, settings=settings(max_examples=examples(15, 8), stateful_step_count=12, deadline=None)
    )
