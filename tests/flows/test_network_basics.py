"""Networks as code on identities and auth policies: apply, idempotence, prune, export, diff."""

from __future__ import annotations

import pytest

from harness.client import ZitiClient
from harness.network import Network, NetworkError, apply, diff, export
from tests.support import auth_policy_body

POLICY = auth_policy_body(max_attempts=3, lockout=5)
NETWORK = {
    "authPolicies": [{"name": "strict", **POLICY}],
    "identities": [
        {"name": "alice", "roleAttributes": ["sales"], "authPolicy": "strict", "password": "alice-pass"},
        {"name": "bob", "type": "Device", "roleAttributes": ["ops"], "enrollment": {"ott": True}},
    ],
}


@pytest.fixture
def ziti(ziti_app):
    with ZitiClient.in_process(ziti_app) as client:
        client.login("admin", "admin")
        yield client


def test_apply_creates_then_is_idempotent(ziti):
    steps = apply(ziti, NETWORK)
    assert [(s.action, s.kind, s.name) for s in steps] == [
        ("create", "authPolicies", "strict"),
        ("create", "identities", "alice"),
        ("create", "identities", "bob"),
    ]
    assert apply(ziti, NETWORK) == []
    alice = next(ziti.management.iterate("listIdentities", filter='name = "alice"'))
    assert alice["authPolicy"]["name"] == "strict" and alice["roleAttributes"] == ["sales"]
    assert ziti.management.authenticate(method="password", body={"username": "alice", "password": "alice-pass"})[
        "token"
    ]


def test_apply_updates_only_changed_fields(ziti):
    apply(ziti, NETWORK)
    changed = Network.from_dict(NETWORK).to_dict()
    changed["identities"][0]["roleAttributes"] = ["sales", "emea"]
    steps = apply(ziti, changed)
    assert [(s.action, s.name, sorted(s.changes)) for s in steps] == [("update", "alice", ["roleAttributes"])]


def test_dry_run_plans_without_writing(ziti):
    steps = apply(ziti, NETWORK, dry_run=True)
    assert len(steps) == 3
    assert list(ziti.management.iterate("listIdentities", filter='name = "alice"')) == []


def test_prune_deletes_what_the_network_does_not_name_but_not_system_entities(ziti):
    apply(ziti, NETWORK)
    smaller = {"authPolicies": NETWORK["authPolicies"], "identities": [NETWORK["identities"][0]]}
    steps = apply(ziti, smaller, prune=True)
    assert [(s.action, s.name) for s in steps] == [("delete", "bob")]
    names = {i["name"] for i in ziti.management.iterate("listIdentities")}
    assert "Default Admin" in names and "bob" not in names


def test_export_round_trips_through_apply(ziti, ziti_app):
    apply(ziti, NETWORK)
    exported = export(ziti)
    assert {i["name"] for i in exported.entities["identities"]} == {"alice", "bob"}
    assert exported.entities["identities"][0]["authPolicy"] == "strict"
    assert apply(ziti, exported) == []
    assert diff(exported, Network.from_yaml(exported.to_yaml())) == []


def test_diff_names_added_removed_and_changed():
    before = Network.from_dict(NETWORK)
    after_dict = before.to_dict()
    after_dict["identities"] = [dict(after_dict["identities"][0], roleAttributes=["x"]), {"name": "carol"}]
    changes = {(d.change, d.name) for d in diff(before, Network.from_dict(after_dict))}
    assert changes == {("changed", "alice"), ("removed", "bob"), ("added", "carol")}


@pytest.mark.parametrize(
    "bad", [{"gadgets": []}, {"identities": [{"roleAttributes": []}]}, {"identities": [{"name": "a"}, {"name": "a"}]}]
)
def test_bad_networks_are_refused(bad):
    with pytest.raises(NetworkError):
        Network.from_dict(bad)


def test_unknown_reference_is_a_network_error(ziti):
    with pytest.raises(NetworkError):
        apply(ziti, {"identities": [{"name": "x", "authPolicy": "missing"}]})
