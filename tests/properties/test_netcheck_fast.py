"""The network check's compiled fast path never accepts a file that jsonschema refuses."""

from __future__ import annotations

import datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.network.check import network_schema, problems
from tests.sizes import examples

# Values as a YAML file can hold them, including the ones YAML 1.1 types by surprise.
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 70_000)
    | st.floats(allow_nan=False)
    | st.dates()
    | st.sampled_from(["", "x", "User", "Dial", "AnyOf", "#all", "@a", "default", "failed"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "ott", "updb"]), inner, max_size=2)
    ),
    max_leaves=6,
)
FIELDS = ["name", "tags", "type", "isAdmin", "roleAttributes", "defaultHostingCost", "serviceHostingCosts"]
FIELDS += ["semantic", "identityRoles", "serviceRoles", "enrollment", "password", "username", "unknownField"]
ENTITIES = st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=5)
KINDS = ["identities", "services", "servicePolicies", "edgeRouters", "configs", "tests", "nope"]
NETWORKS = st.none() | st.dictionaries(st.sampled_from(KINDS), st.none() | st.lists(ENTITIES, max_size=3), max_size=3)


@settings(max_examples=examples(400, 50), deadline=None)
@given(NETWORKS)
def test_the_fast_check_agrees_with_jsonschema(network):
    from jsonschema import Draft202012Validator  # here: its import costs every collecting process a second

    refused = any(True for _ in Draft202012Validator(network_schema()).iter_errors(network))
    schema_problems = [p for p in problems(network, "n.yaml") if "declared twice" not in p]
    assert bool(schema_problems) == refused


def test_a_date_where_a_string_belongs_is_a_problem():
    found = problems({"identities": [{"name": datetime.date(2024, 1, 1)}]}, "n.yaml")
    assert found and "name" in found[0]
