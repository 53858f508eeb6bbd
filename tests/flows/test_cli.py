"""The ziti-harness command line: up, apply, export, diff, scenario."""

from __future__ import annotations

import pytest
import yaml

from controller.app import create_app
from controller.server.serve import ThreadedServer
from harness.cli import main

NETWORK = {
    "identities": [
        {"name": "cli-alice", "roleAttributes": ["sales"], "enrollment": {"ott": True}},
        {"name": "cli-bob", "password": "bob-pass1"},
    ]
}


@pytest.fixture
def served():
    app = create_app()
    with ThreadedServer(app) as server:
        yield server.url, app
    app.controller.close()


def test_apply_then_export_then_diff(served, tmp_path, capsys):
    url, _ = served
    net = tmp_path / "net.yaml"
    net.write_text(yaml.safe_dump(NETWORK))
    assert main(["apply", str(net), "--url", url, "--quiet"]) == 0
    assert "2 change(s)" in capsys.readouterr().out
    assert main(["apply", str(net), "--url", url, "--quiet", "--dry-run"]) == 0
    assert "0 change(s) planned" in capsys.readouterr().out
    assert main(["export", "--url", url]) == 0
    exported = yaml.safe_load(capsys.readouterr().out)
    assert {i["name"] for i in exported["identities"]} == {"cli-alice", "cli-bob"}
    assert main(["diff", str(net), url]) == 0
    changed = tmp_path / "changed.yaml"
    changed.write_text(yaml.safe_dump({"identities": [NETWORK["identities"][0]]}))
    assert main(["diff", str(net), str(changed)]) == 1
    assert "removed identities/cli-bob" in capsys.readouterr().out


def test_up_applies_a_network_and_writes_jwts(tmp_path, capsys):
    net = tmp_path / "net.yaml"
    net.write_text(yaml.safe_dump(NETWORK))
    out = tmp_path / "ids"
    code = main(
        [
            "up",
            str(net),
            "--data",
            str(tmp_path / "data"),
            "--port",
            "0",
            "--http-port",
            "0",
            "--router-port",
            "0",
            "--out",
            str(out),
            "--exit-after-start",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "admin login: admin / admin" in printed and "applied" in printed
    assert (out / "cli-alice.jwt").read_text().count(".") == 2
    assert not (out / "cli-bob.jwt").exists()


def test_scenario_in_process(tmp_path, capsys):
    (tmp_path / "net.yaml").write_text(yaml.safe_dump(NETWORK))
    (tmp_path / "scenario.yaml").write_text(
        yaml.safe_dump(
            {
                "steps": [
                    {"apply": "net.yaml"},
                    {"login": {"username": "cli-bob", "password": "bob-pass1"}},
                    {"expect": {"op": "getCurrentIdentity", "status": 200}},
                    {"fault": {"path": "/current-identity$", "status": 503, "count": 1}},
                    {"expect": {"op": "getCurrentIdentity", "status": 503}},
                    {"advance": 7200},
                    {"expect": {"op": "getCurrentIdentity", "status": 200}},
                ]
            }
        )
    )
    assert main(["scenario", str(tmp_path / "scenario.yaml")]) == 0
    assert "7. expect: getCurrentIdentity -> 200" in capsys.readouterr().out


def test_failed_expectation_exits_1(tmp_path, capsys):
    (tmp_path / "s.yaml").write_text(
        yaml.safe_dump({"steps": [{"expect": {"op": "getCurrentIdentity", "status": 404}}]})
    )
    assert main(["scenario", str(tmp_path / "s.yaml")]) == 1
    assert "FAILED" in capsys.readouterr().err


def test_shipped_example_scenario_runs(capsys):
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "fixtures" / "scenarios" / "demo.yaml"
    assert main(["scenario", str(example)]) == 0
    assert "9. expect: getCurrentIdentity -> 200" in capsys.readouterr().out


def test_list_show_delete_by_kind_and_name(served, tmp_path, capsys):
    import json

    url, _ = served
    net = tmp_path / "net.yaml"
    net.write_text(yaml.safe_dump({"identities": [{"name": "lsd-ana", "roleAttributes": ["sales"]}]}))
    assert main(["apply", str(net), "--url", url, "--quiet"]) == 0
    capsys.readouterr()
    assert main(["list", "identities", 'name contains "lsd-"', "--url", url, "-j"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(i["name"], i["roleAttributes"]) for i in listed] == [("lsd-ana", ["sales"])]
    assert main(["list", "identity", 'name contains "lsd-"', "--url", url]) == 0
    text = capsys.readouterr().out.splitlines()
    assert "lsd-ana" in text[0] and "roleAttributes=sales" in text[0] and text[-1] == "1 identities"
    assert main(["show", "identity", "lsd-ana", "--url", url, "-j"]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == listed[0]["id"]
    assert main(["delete", "identities", "lsd-ana", "--url", url]) == 0
    assert capsys.readouterr().out == "deleted identities/lsd-ana\n"
    assert main(["show", "identities", "lsd-ana", "--url", url]) == 1
    assert "error: no identities named 'lsd-ana'" in capsys.readouterr().err
    assert main(["list", "gadgets", "--url", url]) == 2


def test_explain_and_policy_advisor(served, tmp_path, capsys):
    import json

    url, _ = served
    net = tmp_path / "net.yaml"
    net.write_text(
        yaml.safe_dump(
            {
                "identities": [{"name": "pa-ana", "roleAttributes": ["pa-sales"]}],
                "services": [{"name": "pa-crm", "roleAttributes": ["pa-web"]}, {"name": "pa-wiki"}],
                "edgeRouters": [{"name": "pa-er", "roleAttributes": ["pa-public"]}],
                "servicePolicies": [
                    {
                        "name": "pa-dial",
                        "type": "Dial",
                        "identityRoles": ["#pa-sales"],
                        "serviceRoles": ["#pa-web", "@pa-wiki"],
                    }
                ],
                "edgeRouterPolicies": [
                    {"name": "pa-erp", "identityRoles": ["@pa-ana"], "edgeRouterRoles": ["#pa-public"]}
                ],
                "serviceEdgeRouterPolicies": [
                    {"name": "pa-serp", "serviceRoles": ["@pa-crm"], "edgeRouterRoles": ["#all"]}
                ],
            }
        )
    )
    assert main(["apply", str(net), "--url", url, "--quiet"]) == 0
    capsys.readouterr()
    assert main(["explain", "pa-ana", "pa-crm", "--url", url]) == 0
    assert capsys.readouterr().out.startswith("pa-ana CAN dial pa-crm")
    assert main(["explain", "pa-ana", "pa-wiki", "--url", url, "-j"]) == 0
    explained = json.loads(capsys.readouterr().out)
    assert explained["allowed"] is True and explained["common_routers"] == []
    assert main(["policy-advisor", "identities", "pa-ana", "--url", url]) == 1  # pa-wiki has no router
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "OKAY : pa-ana (1) -> pa-crm (1) Common Routers: (1) Dial: Y Bind: N",
        "ERROR: pa-ana (1) -> pa-wiki (0) Common Routers: (0) Dial: Y Bind: N"
        " - the service is served by no edge router",
    ]
    assert main(["policy-advisor", "services", "pa-crm", "--url", url]) == 0
    assert main(["explain", "pa-anna", "pa-crm", "--url", url]) == 1
    assert "did you mean 'pa-ana'?" in capsys.readouterr().err


def test_generate_prints_a_network_file_of_a_shape(capsys):
    from harness.network import Network

    assert main(["generate", "small"]) == 0
    network = Network.from_yaml(capsys.readouterr().out)
    assert len(network.names("identities")) == 100
