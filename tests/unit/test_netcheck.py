"""Network files are checked against a schema derived from the API's own request schemas."""

from __future__ import annotations

import pytest
import yaml

from controller.api.routes import build_route_table
from harness import netcheck
from harness.kinds import KINDS
from harness.network import Network, NetworkError


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
