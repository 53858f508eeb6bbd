"""The ziti-harness command line: up, apply, export, diff, scenario."""
from __future__ import annotations

import pytest
import yaml

from controller.app import create_app
from controller.serve import ThreadedServer
from harness.cli import main

NETWORK = {"identities": [{"name": "cli-alice", "roleAttributes": ["sales"], "enrollment": {"ott": True}},
                          {"name": "cli-bob", "password": "bob-pass1"}]}


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
    code = main(["up", str(net), "--data", str(tmp_path / "data"), "--port", "0", "--http-port", "0", "--router-port", "0",
                 "--out", str(out), "--exit-after-start"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "admin login: admin / admin" in printed and "applied" in printed
    assert (out / "cli-alice.jwt").read_text().count(".") == 2
    assert not (out / "cli-bob.jwt").exists()


def test_scenario_in_process(tmp_path, capsys):
    (tmp_path / "net.yaml").write_text(yaml.safe_dump(NETWORK))
    (tmp_path / "scenario.yaml").write_text(yaml.safe_dump({"steps": [
        {"apply": "net.yaml"},
        {"login": {"username": "cli-bob", "password": "bob-pass1"}},
        {"expect": {"op": "getCurrentIdentity", "status": 200}},
        {"fault": {"path": "/current-identity$", "status": 503, "count": 1}},
        {"expect": {"op": "getCurrentIdentity", "status": 503}},
        {"advance": 7200},
        {"expect": {"op": "getCurrentIdentity", "status": 200}},
    ]}))
    assert main(["scenario", str(tmp_path / "scenario.yaml")]) == 0
    assert "7. expect: getCurrentIdentity -> 200" in capsys.readouterr().out


def test_failed_expectation_exits_1(tmp_path, capsys):
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"steps": [{"expect": {"op": "getCurrentIdentity", "status": 404}}]}))
    assert main(["scenario", str(tmp_path / "s.yaml")]) == 1
    assert "FAILED" in capsys.readouterr().err
