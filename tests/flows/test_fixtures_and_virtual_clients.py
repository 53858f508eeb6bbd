"""Sample networks apply cleanly and idempotently; virtual SDK clients behave as SDKs do."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.client import ZitiClient
from harness.client.transport import inprocess
from harness.dataplane.virtual import Population
from harness.network import Network, apply, diff, export
from harness.network.generate import SHAPES, generate, spread_attributes

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "networks"


@pytest.fixture
def admin_client(ziti_app):
    with ZitiClient.in_process(ziti_app) as client:
        client.login("admin", "admin")
        yield client


@pytest.mark.parametrize("name", ["demo.yaml", "company.yaml"])
def test_sample_networks_apply_idempotently_and_export_back(admin_client, name):
    network = Network.from_yaml(FIXTURES / name)
    steps = apply(admin_client, network)
    assert steps and all(step.action == "create" for step in steps)
    assert apply(admin_client, network) == []
    assert diff(network, export(admin_client)) == []


def test_generated_small_shape_has_the_real_counts(admin_client):
    network = generate("small")
    counts = tuple(
        len(network[key])
        for key in (
            "services",
            "identities",
            "edgeRouters",
            "servicePolicies",
            "edgeRouterPolicies",
            "serviceEdgeRouterPolicies",
        )
    )
    assert counts == SHAPES["small"]
    apply(admin_client, network)
    assert admin_client.management.list_summary()["identities"] >= 100


def test_attributes_are_spread_as_in_the_real_perf_tests():
    share = sum("attr0" in spread_attributes(i) for i in range(1000)) / 1000
    assert share == pytest.approx(0.5, abs=0.01)
    assert sum("attr7" in spread_attributes(i) for i in range(1000)) / 1000 == pytest.approx(0.1, abs=0.01)


def test_virtual_population_logs_in_lists_services_and_dials(ziti_app, admin_client):
    apply(admin_client, Network.from_yaml(FIXTURES / "company.yaml"))
    users = [
        ("ana", "ana.sales", "Sales-Pass-123"),
        ("dev", "dev.ops", "Ops-Pass-1234"),
        ("cara", "cara.finance", "Money-Pass-789"),
    ]
    report = Population(lambda: inprocess(ziti_app), users, threads=2, dial_probability=1.0).run(seconds=3, max_steps=5)
    by_name = {client.name: client for client in report.clients}
    assert all(client.logged_in for client in report.clients)
    assert by_name["dev"].services == {"ssh", "wiki"}
    assert "crm" in by_name["ana"].services and "payroll" not in by_name["ana"].services
    assert by_name["dev"].sessions > 0  # ssh and wiki carry no posture checks
    assert by_name["dev"].service_refreshes == 1  # services are listed again only when lastChangeAt moves
    assert report.summary()["requests"] == report.requests > 0
    assert 500 not in report.summary()["statuses"]


def test_virtual_clients_refetch_services_when_access_changes(ziti_app, admin_client):
    apply(admin_client, Network.from_yaml(FIXTURES / "demo.yaml"))
    from harness.dataplane.virtual import VirtualClient

    client = VirtualClient(inprocess(ziti_app), "alice", username="alice", password="alice-pass")
    assert client.start() and client.seen.services == {"web"}
    apply(admin_client, {"services": [{"name": "docs", "roleAttributes": ["web"]}]})
    client.refresh()
    assert client.seen.services == {"web", "docs"} and client.seen.service_refreshes == 2
