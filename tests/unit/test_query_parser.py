"""Lexing and parsing of the filter language (reference section 1.1-1.3, 1.7)."""

from datetime import datetime, timezone

import pytest

from controller.errors import InvalidFilter
from controller.store.filter_parser import (
    And,
    Between,
    BoolConst,
    BoolField,
    Compare,
    In,
    IsEmpty,
    Literal,
    Not,
    Or,
    Path,
    SetFn,
    SubQuery,
    parse_text,
    render,
    tokenize,
)
from controller.store.query import Query, parse


def pred(text):
    return parse(text).predicate


def eq(name, value, kind="int"):
    return Compare(Path(name), "=", Literal(kind, value))


def kinds(text):
    return [t.kind for t in tokenize(text) if t.kind != "WS"]


# ---------------------------------------------------------------- precedence quirk (1.3)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a = 1 and b = 2 or c = 3", And(eq("a", 1), Or(eq("b", 2), eq("c", 3)))),
        ("a = 1 or b = 2 and c = 3", Or(eq("a", 1), And(eq("b", 2), eq("c", 3)))),
        ("not a = 1 and b = 2", Not(And(eq("a", 1), eq("b", 2)))),
        ("a = 1 and not b = 2", And(eq("a", 1), Not(eq("b", 2)))),
        ("a = 1 and not b = 2 or c = 3", And(eq("a", 1), Not(Or(eq("b", 2), eq("c", 3))))),
        ("(a = 1 and b = 2) or c = 3", Or(And(eq("a", 1), eq("b", 2)), eq("c", 3))),
        ("(not a = 1) and b = 2", And(Not(eq("a", 1)), eq("b", 2))),
        ("a = 1 and b = 2 and c = 3", And(eq("a", 1), And(eq("b", 2), eq("c", 3)))),
        ("( ( a = 1 ) )", eq("a", 1)),
    ],
)
def test_and_or_have_no_precedence_and_not_runs_to_group_end(text, expected):
    assert pred(text) == expected


def test_not_stops_at_sort_skip_limit():
    q = parse("not a = 1 or b = 2 sort by a skip 1 limit 2")
    assert q == Query(Not(Or(eq("a", 1), eq("b", 2))), [("a", False)], 1, 2)


# ---------------------------------------------------------------- lexical rules (1.1)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("x = .5", eq("x", 5)),  # bad characters are dropped
        ("x = 5;", eq("x", 5)),
        ("x = +5", eq("x", 5)),
        ("x = 1.", eq("x", 1)),
        ("x = 1.5", eq("x", 1.5, "float")),
        ("x = -0", eq("x", 0)),
        ("x = 1e3", eq("x", 1000.0, "float")),
        ("x = 1.5E-2", eq("x", 0.015, "float")),
        ("x = 99999999999999999999", eq("x", 1e20, "float")),  # beyond int64: float like upstream
        ("x=1", eq("x", 1)),
        ("x\t=\n1", eq("x", 1)),
    ],
)
def test_numbers_and_dropped_characters(text, expected):
    assert pred(text) == expected


def test_keywords_are_case_insensitive_and_paths_case_sensitive():
    assert pred('Name = "a" AND isAdmin = TRUE oR x NOT IN ["b"]') == And(
        eq("Name", "a", "string"), Or(eq("isAdmin", True, "bool"), Not(In(Path("x"), (Literal("string", "b"),))))
    )


def test_paths_may_have_dashes_after_the_first_segment_but_no_digits():
    assert pred('tags.my-key_x = "v"') == eq("tags.my-key_x", "v", "string")
    with pytest.raises(InvalidFilter):
        parse("tags.env2 = 1")
    with pytest.raises(InvalidFilter):
        parse("my-key = 1")


def test_keyword_prefixed_words_are_identifiers():
    assert pred("android") == BoolField(Path("android"))
    assert pred("notes") == BoolField(Path("notes"))
    assert pred("and.x") == BoolField(Path("and.x"))
    # `not in` is one token, so this is not `not inactive`
    with pytest.raises(InvalidFilter):
        parse("not inactive")


@pytest.mark.parametrize(
    "text, value",
    [(r'"a\"b"', 'a"b'), (r'"a\\b"', "a\\b"), (r'"\f\n\r\t"', "\f\n\r\t"), ('"héllo ✓"', "héllo ✓"), ('""', "")],
)
def test_string_escapes(text, value):
    assert pred("x = " + text) == eq("x", value, "string")


def test_single_quotes_are_not_strings_and_quoted_paths_keep_quotes():
    with pytest.raises(InvalidFilter):
        parse("x = 'abc'")
    assert pred("'name' = \"a\"") == eq("'name'", "a", "string")


def test_datetime_literals():
    utc = timezone.utc
    assert pred("d = datetime(2024-01-02T03:04:05Z)") == eq("d", datetime(2024, 1, 2, 3, 4, 5, tzinfo=utc), "datetime")
    assert pred("d = datetime( 2024-01-02T04:04:05.25+01:00 )") == eq(
        "d", datetime(2024, 1, 2, 3, 4, 5, 250000, tzinfo=utc), "datetime"
    )
    for bad in (
        "DATETIME(2024-01-02T03:04:05Z)",
        "datetime(2024-01-02T03:04Z)",
        "datetime(2024-01-02)",
        "datetime(2024-02-30T00:00:00Z)",
        "datetime(2024-01-02t03:04:05Z)",
        'datetime("2024-01-02T03:04:05Z")',
    ):
        with pytest.raises(InvalidFilter):
            parse("d = " + bad)


def test_multiword_operator_tokens():
    assert kinds('x not contains "a"') == ["IDENTIFIER", "CONTAINS", "STRING", "EOF"]
    assert kinds('x not   icontains "a"') == ["IDENTIFIER", "ICONTAINS", "STRING", "EOF"]
    assert kinds("x not\tbetween 1 and 2") == ["IDENTIFIER", "BETWEEN", "NUMBER", "AND", "NUMBER", "EOF"]
    assert kinds('x not in ["a"]')[:2] == ["IDENTIFIER", "IN"]
    assert kinds('x not  in ["a"]')[:3] == ["IDENTIFIER", "NOT", "IN"]  # `not in` takes exactly one space


# ---------------------------------------------------------------- predicate forms (1.2)


@pytest.mark.parametrize(
    "text, expected",
    [
        ('x != "a"', Compare(Path("x"), "!=", Literal("string", "a"))),
        ("x <= 1", Compare(Path("x"), "<=", Literal("int", 1))),
        ('x >= "a"', Compare(Path("x"), ">=", Literal("string", "a"))),
        ("x = null", Compare(Path("x"), "=", Literal("null"))),
        ("x != null", Compare(Path("x"), "!=", Literal("null"))),
        ("x contains 5", Compare(Path("x"), "contains", Literal("int", 5))),
        ('x icontains "A"', Compare(Path("x"), "icontains", Literal("string", "A"))),
        ('x not icontains "A"', Compare(Path("x"), "not icontains", Literal("string", "A"))),
        ("x in [1, 2.5]", In(Path("x"), (Literal("int", 1), Literal("float", 2.5)))),
        ("x in [ 1 ,2 ]", In(Path("x"), (Literal("int", 1), Literal("int", 2)))),
        ("x between 1 and 2", Between(Path("x"), Literal("int", 1), Literal("int", 2))),
        ("x not between 1 and 2", Not(Between(Path("x"), Literal("int", 1), Literal("int", 2)))),
        ("true", BoolConst(True)),
        ("FALSE", BoolConst(False)),
        ("not x", Not(BoolField(Path("x")))),
        ('anyOf(s) = "a"', Compare(SetFn("anyOf", Path("s")), "=", Literal("string", "a"))),
        ('allOf( s ) != "a"', Compare(SetFn("allOf", Path("s")), "!=", Literal("string", "a"))),
        ("count(s) >= 2", Compare(SetFn("count", Path("s")), ">=", Literal("int", 2))),
        ("isEmpty(s)", IsEmpty(Path("s"))),
        ('anyOf(s) not in ["a"]', Not(In(SetFn("anyOf", Path("s")), (Literal("string", "a"),)))),
        (
            'isEmpty(from sp where anyOf(services) = "x")',
            IsEmpty(SubQuery("sp", Compare(SetFn("anyOf", Path("services")), "=", Literal("string", "x")))),
        ),
    ],
)
def test_predicate_forms(text, expected):
    assert pred(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        'x startswith "a"',
        'x endswith "a"',
        'x like "a"',
        'x <> "a"',
        'x == "a"',
        "x is null",
        "x < null",
        "x < true",
        "x icontains 5",
        "x contains null",
        "x in []",
        'x in ["a", 1]',
        "x between 1 and datetime(2024-01-01T00:00:00Z)",
        'x between "a" and "b"',
        "isEmpty(s) = false",
        "count(s)",
        "anyOf(s)",
        "not(x)",
        "not",
        "x and(y)",
        "(x)and y",
        "x andy",
        'x in["a"]',
        'x contains"a"',
        "x in [1 2]",
        "(x",
        "x)",
        "anyOf (s) = 1",
        "isEmpty (s)",
        "   ",
        ".",
        "skip 1.5",
        "limit 2.0",
        "skip none",
        "limit 1 skip 1",
        "skip 1 sort by x",
        "sort by",
        "sort by x,",
        "sort name",
        "x = 1e999",
        "and",
        "x = 1 and",
        "true true",
    ],
)
def test_syntax_errors_raise_invalid_filter(text):
    with pytest.raises(InvalidFilter):
        parse(text)


def test_error_detail_reads_like_upstream():
    with pytest.raises(InvalidFilter) as info:
        parse('name = "a" and')
    assert info.value.detail == 'Unexpected symbol: "<EOF>" at line: 1 column: 14. line: 1, column: 14, symbol: <EOF>'
    assert info.value.code == "INVALID_FILTER"
    assert info.value.cause == {"code": "UNHANDLED", "message": info.value.detail}
    with pytest.raises(InvalidFilter) as info:
        parse('name = "a"\n  or x <> 1')
    assert info.value.detail.startswith('Unexpected symbol: ">" at line: 2 column: 8.')


def test_deep_nesting_is_an_invalid_filter_not_a_crash():
    for text in ("(" * 5000 + "x" + ")" * 5000, "not " * 5000 + "x"):
        with pytest.raises(InvalidFilter):
            parse(text)


def test_huge_inputs_stay_invalid_filters_and_linear():
    assert pred("x = -9223372036854775808") == eq("x", -(2**63))
    assert pred("x = 9223372036854775808") == eq("x", 2.0**63, "float")
    for text in ("x = " + "1" * 5000, "skip " + "9" * 5000, "x = " + "0" * 100000, "x = " + '"' * 100001):
        with pytest.raises(InvalidFilter):
            parse(text)


def test_long_or_chains_parse_without_recursion():
    text = " or ".join(f'id = "{i}"' for i in range(3000))
    node = pred(text)
    assert isinstance(node, Or) and render(node) == text


# ---------------------------------------------------------------- query shape, rendering


@pytest.mark.parametrize(
    "text, expected",
    [
        (None, Query()),
        ("", Query()),
        ("sort by name", Query(None, [("name", False)])),
        ("skip 5", Query(None, [], 5)),
        ("limit 5", Query(None, [], None, 5)),
        ("LIMIT NONE", Query(None, [], None, -1)),
        ("true limit -1", Query(BoolConst(True), [], None, -1)),
        (
            "x sort by a desc,b asc , c skip 0 limit 3",
            Query(BoolField(Path("x")), [("a", True), ("b", False), ("c", False)], 0, 3),
        ),
        ("sort by a, b, c, d, e, f, g", Query(None, [(n, False) for n in "abcdefg"])),
    ],
)
def test_query_shape(text, expected):
    assert parse(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "a = 1 and (b = 2 or c = 3)",
        "(a = 1 and b = 2) or not c = 3",
        'x not in ["a", "b"] sort by x desc limit none',
        "d between datetime(2024-01-01T00:00:00.5Z) and datetime(2025-01-01T00:00:00Z) skip 3",
        'x = "q\\"uote\\n" and anyOf(s) contains 1.5e-7',
        "(not x) or isEmpty(s)",
    ],
)
def test_render_parses_back_to_the_same_query(text):
    q = parse(text)
    assert parse(str(q)) == q


def test_repr_is_valid_python():
    import datetime as datetime_module  # noqa: F401  (needed by the eval below)

    from controller.store import filter_parser as fp

    node = pred('a = 1 and not d > datetime(2024-01-01T00:00:00Z) or anyOf(s) in ["x"]')
    assert eval(repr(node), {**vars(fp), "datetime": datetime_module}) == node


def test_parse_text_result_feeds_query():
    assert Query(*parse_text("x")) == Query(BoolField(Path("x")))
