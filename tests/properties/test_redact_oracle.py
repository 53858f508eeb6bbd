"""``events.redact`` against a plain oracle that copies everything: same result, and no copy when clean."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from controller.events import REDACTED, _sensitive, redact

KEYS = st.sampled_from(["id", "name", "tags", "password", "passwordHash", "jwt", "private_key", "extJwt", "app-data"])
SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4), max_leaves=12
)


def oracle(value):
    """Redaction as specified: every sensitive key's non-null value replaced, at any depth."""
    if isinstance(value, dict):
        return {key: REDACTED if _sensitive(key) and item is not None else oracle(item) for key, item in value.items()}
    if isinstance(value, list):
        return [oracle(item) for item in value]
    return value


@given(VALUES)
def test_redact_replaces_exactly_what_the_oracle_replaces(value):
    assert redact(value) == oracle(value)


@given(VALUES)
def test_redact_never_changes_its_input_and_copies_only_when_something_is_replaced(value):
    before = repr(value)
    out = redact(value)
    assert repr(value) == before
    if out == value:  # nothing was replaced (no generated text is as long as REDACTED)
        assert out is value
