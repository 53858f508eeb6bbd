"""The OIDC endpoints' form and query parser reads what ``urllib.parse.parse_qs`` reads, first value of each field."""

from __future__ import annotations

from urllib.parse import parse_qs, quote, urlencode

import falcon
import falcon.testing
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.api.ops_oidc import first_values, query_values
from controller.app import create_app
from controller.config import Config

#: characters a hostile or sloppy client may put in a query or form: separators, escapes (good and broken), spaces
PIECES = st.sampled_from(["&", "=", "+", "%", "%2", "%20", "%26", "%3D", "%2B", "%zz", "%C3%A9", "%FF", " ", ";", "é"])
RAW = st.lists(st.one_of(PIECES, st.text(min_size=1, max_size=4)), max_size=30).map("".join)


def reference(text: str) -> dict:
    return {key: values[0] for key, values in parse_qs(text, keep_blank_values=True).items()}


@settings(max_examples=400)
@given(RAW)
def test_any_text_parses_as_parse_qs_first_values(text):
    assert first_values(text) == reference(text)


@given(st.lists(st.tuples(st.text(max_size=8), st.text(max_size=12)), max_size=8))
def test_encoded_fields_round_trip_first_value_wins(pairs):
    for encoded in (urlencode(pairs), urlencode(pairs, quote_via=quote)):
        assert first_values(encoded) == reference(encoded)
        firsts: dict = {}
        for name, value in pairs:
            firsts.setdefault(name, value)
        assert first_values(encoded) == firsts


@pytest.fixture(scope="module")
def request_options():
    """The request options of the controller's app (how Falcon parses a query)."""
    app = create_app(Config())
    yield app.req_options
    app.controller.close()


@settings(max_examples=400)
@given(RAW)
def test_the_query_falcon_parsed_reads_as_first_values(request_options, text):
    """``/oidc/authorize`` reads the parse Falcon made of the query: the same fields and values as ``first_values``."""
    environ = falcon.testing.create_environ(path="/oidc/authorize")
    environ["QUERY_STRING"] = text.encode("utf-8").decode("latin-1")  # as a WSGI server tunnels the raw bytes
    parsed = query_values(falcon.Request(environ, options=request_options))
    expected = first_values(environ["QUERY_STRING"])
    parsed.pop("", None), expected.pop("", None)  # a nameless field is never read (Falcon keeps it only with a value)
    assert parsed == expected


def test_the_c_sdk_token_form_with_its_repeated_state():
    form = "state=s1&code=c0de&state=s2&grant_type=authorization_code&redirect_uri=http://localhost:20314/auth/callback"
    assert first_values(form) == {
        "state": "s1",
        "code": "c0de",
        "grant_type": "authorization_code",
        "redirect_uri": "http://localhost:20314/auth/callback",
    }
