"""Network files are checked against a schema derived from the API's own request schemas."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from controller.api.routes import build_route_table
from harness.client.kinds import KINDS
from harness.network import Network, NetworkError
from harness.network import check as netcheck

ROOT = Path(__file__).resolve().parents[2]


def test_each_kind_takes_the_api_create_schema_of_its_fields():
    bodies = {op.op_id: op.body for op in build_route_table().for_api("management") if op.body}
    for kind in KINDS:
        schema = netcheck.kind_schema(kind)
        api = bodies[kind.create_op]["properties"]
        for name in kind.fields:
            assert schema["properties"][name] == api[name] or name == "semantic", (kind.key, name)
        assert schema["additionalProperties"] is False
        for name, ref in kind.refs.items():  # references by name, not the wire's ids
            assert ref.wire not in schema["properties"] or ref.wire == name


def test_the_kept_schema_is_the_one_the_route_table_and_kinds_derive():
    # order too: the "did you mean" suggestions and the problems' order follow the schema's
    kept, derived = netcheck.network_schema(), netcheck.derive_network_schema()
    assert json.dumps(kept) == json.dumps(derived), (
        "harness/network/schema.py is stale: python -m harness.network.opgen"
    )


def test_checking_a_file_imports_no_operation_of_the_controller(tmp_path):
    net = tmp_path / "net.yaml"
    net.write_text("identities:\n  - {name: ana, roleAtributes: [x]}\n")
    probe = (
        "import sys\n"
        "from controller.console import without_unused_imports\n"
        "without_unused_imports()  # as the command lines do (no IRI grammar built by jsonschema)\n"
        "from harness.network.check import NetworkProblems, check_file\n"
        "try:\n"
        f"    check_file({str(net)!r})\n"
        "except NetworkProblems as ex:\n"
        "    print(ex.problems)\n"
        "print(sorted(m for m in sys.modules if m.startswith('controller.api.ops_') or m == 'falcon'))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    problems, imported = done.stdout.splitlines()
    assert "unknown field 'roleAtributes' (did you mean 'roleAttributes'?)" in problems
    assert imported == "[]"


def test_every_problem_is_reported_at_once_with_entity_field_and_suggestion():
    found = netcheck.problems(
        {"identities": [{"name": "ana", "roleAtributes": ["x"], "type": "Robot"}], "servicePolicy": []}, "net.yaml"
    )
    assert found == [
        "net.yaml: unknown kind 'servicePolicy' (did you mean 'servicePolicies'?)",
        "net.yaml: identities/ana: unknown field 'roleAtributes' (did you mean 'roleAttributes'?)",
        "net.yaml: identities/ana: type: 'Robot' is not one of User, Device, Service, Router, Default",
    ]


def test_references_resolve_in_the_file_or_on_the_controller():
    entities = {
        "services": [{"name": "crm", "configs": ["crm-intercept"]}],
        "servicePolicies": [{"name": "p", "type": "Dial", "identityRoles": ["@ana", "#all"], "serviceRoles": ["@crm"]}],
    }
    assert netcheck.unresolved(entities, "f") == [
        "f: services/crm: configs: no configs named 'crm-intercept'",
        "f: servicePolicies/p: identityRoles: no identities named 'ana'",
    ]
    on_controller = {"identities": {"ana"}, "configs": {"crm-intercept"}}
    assert netcheck.unresolved(entities, "f", lambda key: on_controller.get(key, set())) == []


def test_a_yaml_file_with_unknown_fields_names_the_file(tmp_path):
    path = tmp_path / "net.yaml"
    path.write_text(yaml.safe_dump({"identities": [{"name": "bo", "pasword": "secret-1"}]}))
    with pytest.raises(NetworkError) as raised:
        Network.from_yaml(path)
    assert raised.value.problems == [f"{path}: identities/bo: unknown field 'pasword' (did you mean 'password'?)"]


def test_the_c_loader_is_used_when_pyyaml_has_it():
    assert netcheck.LOADER is getattr(yaml, "CSafeLoader", yaml.SafeLoader)
