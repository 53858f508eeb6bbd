"""The fast YAML path gives exactly what the safe loader gives: the same value or the same error."""

from __future__ import annotations

import datetime

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.network import yaml_fast
from tests.sizes import examples

# Scalars whose type a YAML 1.1 resolver decides from their text.
TRICKY = ["yes", "No", "on", "OFF", "~", "null", "", "1e3", "0x1F", "0o17", "017", "1_000", "-.inf", ".NaN"]
TRICKY += ["2001-12-14", "2001-12-14t21:59:43.10-05:00", "<<", "=", "#all", "@id-1", "a: b", "- x", "'q'", "12:30"]
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.dates(),
    st.sampled_from(TRICKY),
    st.text(max_size=12),
)
DATA = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(SCALARS, inner, max_size=4), max_leaves=20
)
DOCUMENTS = [
    "a: &x [1, 2]\nb: *x\n",
    "base: &b {k: 1}\nmore:\n  <<: *b\n  j: 2\n",
    "a: !!str 12\nb: !!int '7'\nc: ! 3\nd: !custom x\n",
    "s: !!set {a, b}\no: !!omap [a: 1]\n",
    "a: 1\n---\nb: 2\n",
    "---\n",
    "",
    "? [1, 2]\n: x\n",
    "? {a: 1}\n: x\n",
    "a: *missing\n",
    "a: &x 1\nb: &x 2\n",
    "a: &r [*r]\n",
    "a: [1, 2\n",
    "a: b: c\n",
    "- &s hello\n- *s\n- !!binary aGk=\n",
    "a: 2001-12-14 21:59:43.10 -5\nb: = \n",
]


def _outcome(load, text):
    try:
        return "value", repr(load(text))
    except yaml.YAMLError as ex:
        return type(ex).__name__, str(ex)


def _safe_load(text):
    return yaml.load(text, Loader=yaml_fast.LOADER)  # noqa: S506 - a safe loader


@settings(max_examples=examples(300, 50), deadline=None)
@given(DATA, st.booleans())
def test_dumped_data_loads_as_the_safe_loader_loads_it(data, flow):
    text = yaml.safe_dump(data, default_flow_style=flow, allow_unicode=True)
    assert _outcome(yaml_fast.load, text) == _outcome(_safe_load, text)


@given(st.sampled_from(DOCUMENTS), st.sampled_from([str, str.encode]))
def test_rare_documents_and_errors_are_the_safe_loaders(text, as_input):
    assert _outcome(yaml_fast.load, as_input(text)) == _outcome(_safe_load, as_input(text))


@settings(max_examples=examples(300, 50), deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab:- \n[]{},&*!'\"#?<=~1.")), max_size=40))
def test_any_text_gives_the_same_value_or_error(text):
    assert _outcome(yaml_fast.load, text) == _outcome(_safe_load, text)


def test_a_network_document_is_built_with_the_right_types():
    text = "identities:\n  - {name: a, roleAttributes: [x, 'yes'], tags: {n: 1, when: 2024-01-02}}\n"
    data = yaml_fast.load(text)
    assert data == {
        "identities": [
            {"name": "a", "roleAttributes": ["x", "yes"], "tags": {"n": 1, "when": datetime.date(2024, 1, 2)}}
        ]
    }
