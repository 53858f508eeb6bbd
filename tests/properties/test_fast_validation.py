"""The compiled fast path of body validation never accepts what jsonschema refuses."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.api.ops_simulation import operations as simulation_operations
from controller.api.routes import build_route_table
from controller.model.validation import passes_fast, validator_for

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


@st.composite
def bodies(draw):
    _, schema = draw(st.sampled_from(SCHEMAS))
    names = st.sampled_from(keys_of(schema) or ["x"])
    values = st.recursive(
        SCALARS,
        lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(names, inner, max_size=4)),
        max_leaves=8,
    )
    return schema, draw(st.dictionaries(names, values, max_size=8))


@settings(max_examples=1500, deadline=None)
@given(bodies())
def test_fast_acceptance_implies_jsonschema_acceptance(case):
    schema, body = case
    if passes_fast(schema, body):
        assert list(validator_for(schema).iter_errors(body)) == []
