"""The compiled fast paths of body and network-file validation never accept what jsonschema refuses."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.api.ops_simulation import operations as simulation_operations
from controller.api.routes import build_route_table
from controller.model.validation import passes_fast, validator_for
from harness.network import check as netcheck
from harness.testing.strategies import networks
from tests.sizes import examples

SCHEMAS = sorted(
    {
        repr(op.body): op.body
        for op in build_route_table([type("m", (), {"operations": staticmethod(simulation_operations)})])
        if op.body is not None
    }.items()
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([1.0, 0.5, -1.0, 1e300]),
    st.sampled_from(
        [
            "",
            "x",
            "User",
            "Dial",
            "AnyOf",
            "#all",
            "2024-01-01T00:00:00Z",
            "2024-13-01T00:00:00Z",
            "0001-01-01T00:00:00Z",
            "not-a-date",
            "6f1c4a0e-8a43-4c6f-9d64-1f2a3b4c5d6e",
            "ott",
            "updb",
            "PROCESS",
            "MFA",
        ]
    ),
)


def keys_of(schema) -> list[str]:
    """Every property name in the schema, at any depth."""
    found = []
    if isinstance(schema, dict):
        found += list((schema.get("properties") or {}).keys())
        for value in schema.values():
            found += keys_of(value)
    elif isinstance(schema, list):
        for value in schema:
            found += keys_of(value)
    return found


def body_values(schema) -> st.SearchStrategy:
    """Bodies made of the schema's own property names and tricky scalars."""
    names = st.sampled_from(keys_of(schema) or ["x"])
    values = st.recursive(
        SCALARS,
        lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(names, inner, max_size=4)),
        max_leaves=8,
    )
    return st.dictionaries(names, values, max_size=8)


# NOTE(tests): built once per schema: a strategy built inside each example is validated again every time
BODY_VALUES = {key: body_values(schema) for key, schema in SCHEMAS}


@st.composite
def bodies(draw):
    key, schema = draw(st.sampled_from(SCHEMAS))
    return schema, draw(BODY_VALUES[key])


@settings(max_examples=examples(1500, 200), deadline=None)
@given(bodies())
def test_fast_acceptance_implies_jsonschema_acceptance(case):
    schema, body = case
    if passes_fast(schema, body):
        assert list(validator_for(schema).iter_errors(body)) == []


NETWORK_VALUES = body_values(netcheck.network_schema())


@settings(max_examples=examples(300, 40), deadline=None)
@given(st.one_of(NETWORK_VALUES, networks(max_size=3)))
def test_a_network_file_the_compiled_check_accepts_has_no_schema_problem(data):
    if netcheck.passes_fast(data):
        assert netcheck._schema_problems(data, "net.yaml") == []
