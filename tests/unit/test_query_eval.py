"""Evaluation of filters on records: types, nulls, sets, tags (reference section 1.2-1.5, 1.9)."""

import pytest

from controller.errors import InvalidFilter
from controller.store.query import Field, FieldSet, parse


def _get(key):
    return lambda r: r.get(key)


FIELDS = FieldSet(
    [
        Field("name", "string", _get("name")),
        Field("type", "string", _get("type")),
        Field("externalId", "string", _get("externalId")),
        Field("cost", "int", _get("cost")),
        Field("score", "float", _get("score")),
        Field("isAdmin", "bool", _get("isAdmin")),
        Field("roleAttributes", "set", _get("roleAttributes")),
        Field("identityRoles", "set", _get("identityRoles")),
    ]
)

RECORDS = [
    {
        "id": "a",
        "name": "svc1",
        "type": "Dial",
        "externalId": "x1",
        "cost": 5,
        "score": 0.5,
        "isAdmin": True,
        "roleAttributes": ["sales", "ops"],
        "identityRoles": ["#all"],
        "created_at": "2023-12-31T23:59:59.999Z",
        "updated_at": "2024-01-01T00:00:00.000Z",
        "tags": {"env": "prod", "enabled": True, "n": 5},
    },
    {
        "id": "b",
        "name": "web-svc",
        "type": "Bind",
        "cost": 10,
        "score": 2.0,
        "isAdmin": False,
        "roleAttributes": [],
        "created_at": "2024-01-01T00:00:00.000Z",
        "updated_at": "2024-06-01T00:00:00.000Z",
        "tags": {"env": "dev", "owner": "bob"},
    },
    {
        "id": "c",
        "name": "WEB2",
        "cost": 20,
        "roleAttributes": ["legacy"],
        "created_at": "2024-05-01T00:00:00.000Z",
        "updated_at": "2025-01-01T00:00:00.000Z",
        "tags": {},
    },
    {
        "id": "d",
        "name": None,
        "cost": None,
        "isAdmin": None,
        "roleAttributes": None,
        "created_at": "2025-01-01T00:00:00.000Z",
        "tags": None,
    },
    {
        "id": "e",
        "name": "5",
        "cost": 100,
        "score": 10,
        "isAdmin": False,
        "roleAttributes": ["sales", "salsa", "x"],
        "created_at": "2024-01-01T00:00:00.000Z",
        "updated_at": None,
        "tags": {"env": 5},
    },
]


def ids(text, fields=FIELDS, records=RECORDS):
    test = parse(text).compile(fields)
    return "".join(r["id"] for r in records if test(r))


# every example line of section 1.9, evaluated
EXAMPLES = [
    ('name = "svc1"', "a"),
    ('name != "svc1"', "bcde"),
    ('name contains "web"', "b"),
    ('name icontains "WEB"', "bc"),
    ('name not contains "x"', "abcde"),
    ('id in ["a", "c"]', "ac"),
    ('id not in ["a"]', "bcde"),
    ("isAdmin", "a"),
    ("not isAdmin", "bcde"),
    ("isAdmin = false", "be"),
    ("cost > 10 and cost <= 100", "ce"),
    ("cost between 10 and 20", "b"),
    ("createdAt > datetime(2024-01-01T00:00:00Z)", "cd"),
    ("updatedAt between datetime(2024-01-01T00:00:00Z) and datetime(2025-01-01T00:00:00Z)", "ab"),
    ("externalId = null", "bcde"),
    ('tags.env = "prod"', "a"),
    ("tags.owner != null", "b"),
    ("tags.enabled = true", "a"),
    ('anyOf(roleAttributes) = "sales"', "ae"),
    ('anyOf(roleAttributes) in ["sales", "ops"]', "ae"),
    ('anyOf(roleAttributes) contains "sal"', "ae"),
    ('allOf(roleAttributes) != "legacy"', "abde"),
    ("count(roleAttributes) >= 2", "ae"),
    ("isEmpty(roleAttributes)", "bd"),
    ("not isEmpty(roleAttributes)", "ace"),
    ('anyOf(identityRoles) = "#all"', "a"),
    ('type = "Dial"', "a"),
    ('(name = "svc1" or name = "5") and isAdmin = false', "e"),
    ('name contains "s" sort by name desc, createdAt asc skip 20 limit 10', "ab"),
    ("sort by createdAt desc limit 5", "abcde"),
    ("true limit none", "abcde"),
    ("skip 10", "abcde"),
    ('id contains "e" and id contains "prefix-" sort by id', ""),
]


@pytest.mark.parametrize("text, expected", EXAMPLES)
def test_reference_examples(text, expected):
    assert ids(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        # and/or without precedence; not covers the rest of the group
        ('name = "svc1" and cost = 5 or cost = 20', "a"),  # SQL would give "ac"
        ('cost = 20 or name = "svc1" and cost = 10', "c"),
        ('not name = "svc1" and cost = 5', "bcde"),  # SQL would give ""
        ('(not name = "svc1") and cost = 10', "b"),
        ("true", "abcde"),
        ("false", ""),
        ("not false", "abcde"),
    ],
)
def test_boolean_combination(text, expected):
    assert ids(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        # missing values: =, <, contains, in, between false; !=, not contains, not icontains true
        ('name = "x"', ""),
        ('name != "x"', "abcde"),
        ('name < "zzz"', "abce"),
        ('name contains ""', "abce"),
        ('name not contains ""', "d"),
        ('name not icontains "SVC"', "cde"),
        ('name in ["svc1"]', "a"),
        ('name not in ["svc1"]', "bcde"),
        ("cost between 0 and 1000", "abce"),
        ("cost not between 0 and 1000", "d"),
        ("isAdmin != true", "bcde"),
        ("isAdmin != false", "acd"),
        ("name = null", "d"),
        ("name != null", "abce"),
        ("isAdmin = null", "cd"),
        ("updatedAt = null", "de"),
    ],
)
def test_missing_values(text, expected):
    assert ids(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("cost between 5 and 10", "a"),
        ("cost between 10 and 20", "b"),
        ("cost between 10 and 20.5", "bc"),
        ("cost between 100 and 100", ""),
        ("score between 0.5 and 10", "ab"),
        ("createdAt between datetime(2024-01-01T00:00:00Z) and datetime(2024-05-01T00:00:00Z)", "be"),
    ],
)
def test_between_includes_lower_and_excludes_upper(text, expected):
    assert ids(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("name = 5", "e"),
        ('name = "5"', "e"),
        ("name in [5, 6]", "e"),
        ("name contains 5", "e"),
        ('name < "b"', "ce"),  # byte order: "5" < "WEB2" < "b"
        ('name >= "svc1"', "ab"),
        ("cost = 5.0", "a"),
        ("cost < 5.5", "a"),
        ("cost in [5, 20.0]", "ac"),
        ("score = 2", "b"),
        ("score > 1", "be"),
        ("cost contains 0", "bce"),
        ('cost contains "1"', "be"),
        ('score contains "0.5"', "a"),
        ("createdAt = datetime(2023-12-31T23:59:59.999Z)", "a"),
        ("createdAt = datetime(2024-01-01T01:00:00+01:00)", "be"),
        ("createdAt in [datetime(2024-01-01T00:00:00Z), datetime(2025-01-01T00:00:00Z)]", "bde"),
        ("createdAt > datetime(2023-12-31T23:59:59.9985Z)", "abcde"),
        ("createdAt < datetime(2023-12-31T23:59:59.9995Z)", "a"),
        ('name icontains "wEb"', "bc"),
        ('name not contains "svc"', "cde"),
        ("isAdmin = TRUE", "a"),
    ],
)
def test_types_and_coercions(text, expected):
    assert ids(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        'isAdmin = "x"',
        "isAdmin = 1",
        "isAdmin < true",
        'cost = "1"',
        'cost in ["1"]',
        "cost = true",
        'createdAt = "2024-01-01T00:00:00Z"',
        "createdAt = 1",
        "createdAt contains 1",
        "name = true",
        "name = datetime(2024-01-01T00:00:00Z)",
        "name between 1 and 2",
        "isAdmin contains 1",
        'isAdmin icontains "t"',
        "name",
        "cost",
        "createdAt",
        'NAME = "svc1"',
        "nope = 1",
        "tags = 1",
        "sort by nope",
        "sort by tags.env",
        "cost between datetime(2024-01-01T00:00:00Z) and datetime(2025-01-01T00:00:00Z)",
    ],
)
def test_type_mismatches_and_unknown_fields(text):
    with pytest.raises(InvalidFilter):
        ids(text)


def test_unknown_symbol_detail():
    with pytest.raises(InvalidFilter) as info:
        ids("nope = 1")
    assert info.value.detail == "unknown symbol 'nope'"


@pytest.mark.parametrize(
    "text, expected",
    [
        ('allOf(roleAttributes) = "sales"', "bd"),  # true on empty
        ('anyOf(roleAttributes) != "sales"', "ace"),  # false on empty
        ('allOf(roleAttributes) contains "s"', "abd"),
        ('anyOf(roleAttributes) icontains "LEG"', "c"),
        ('anyOf(roleAttributes) not in ["sales"]', "bcd"),  # not wraps the whole anyOf, as upstream
        ('anyOf(roleAttributes) not contains "s"', "ce"),  # per element
        ('anyOf(roleAttributes) < "p"', "ac"),
        ("anyOf(roleAttributes) = 5", ""),
        ("count(roleAttributes) = 0", "bd"),
        ("count(roleAttributes) between 1 and 3", "ac"),
        ("count(roleAttributes) in [1, 3]", "ce"),
        ("count(roleAttributes) contains 3", "e"),
    ],
)
def test_set_functions(text, expected):
    assert ids(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        'roleAttributes = "x"',
        "roleAttributes = null",
        "roleAttributes",
        'roleAttributes contains "x"',
        'anyOf(name) = "x"',
        "count(name) > 1",
        "isEmpty(name)",
        "isEmpty(tags.env)",
        "anyOf(roleAttributes) = null",
        "anyOf(roleAttributes) = true",
        "anyOf(roleAttributes) between 1 and 2",
        "sort by roleAttributes",
        "count(roleAttributes) = null",
        'isEmpty(from servicePolicies where anyOf(services) = "x")',
    ],
)
def test_set_misuse(text):
    with pytest.raises(InvalidFilter):
        ids(text)


@pytest.mark.parametrize(
    "text, expected",
    [
        ('tags.env = "prod"', "a"),
        ('tags.env != "prod"', "bcde"),
        ("tags.env = 5", "e"),
        ("tags.env >= 5", "e"),
        ('tags.env contains "ro"', "a"),
        ("tags.env contains 5", "e"),
        ('tags.env icontains "DEV"', "b"),
        ("tags.enabled", "a"),
        ("not tags.enabled", "bcde"),
        ("tags.n > 4.5", "a"),
        ("tags.n in [1, 5]", "a"),
        ("tags.n between 5 and 6", "a"),
        ('tags.env in ["dev", "prod"]', "ab"),
        ("tags.enabled != false", "abcde"),
        ("tags.owner = null", "acde"),
        ("tags.missing = null", "abcde"),
    ],
)
def test_tags_are_typed_by_the_literal(text, expected):
    assert ids(text) == expected


def test_tags_can_be_disabled_or_read_elsewhere():
    no_tags = FieldSet([], tags=False)
    with pytest.raises(InvalidFilter):
        ids('tags.env = "prod"', no_tags)
    custom = FieldSet([], tags=lambda r: r.get("labels"))
    records = [{"id": "a", "labels": {"env": "x"}}, {"id": "b", "tags": {"env": "x"}}]
    assert ids('tags.env = "x"', custom, records) == "a"


def test_quoted_paths_never_match():
    assert ids("'name' = \"svc1\"") == ""
    assert ids("'name' != \"svc1\"") == ""
    assert ids("not 'isAdmin'") == "abcde"
    assert ids("anyOf('roleAttributes') = \"sales\"") == ""


def test_field_set_names_and_lookup():
    names = FIELDS.names()
    assert {"id", "createdAt", "updatedAt", "name", "roleAttributes"} <= set(names)
    assert names.count("tags") == 1 and len(names) == len(set(names))
    assert "tags" not in FieldSet([], tags=False).names()
    assert "name" in FIELDS and FIELDS.get("name").type == "string" and FIELDS.get("tags.env") is None
    assert not FIELDS.get("roleAttributes").sortable


def test_caller_fields_override_implicit_ones():
    fields = FieldSet([Field("createdAt", "string", _get("created"))])
    assert ids('createdAt = "yesterday"', fields, [{"id": "a", "created": "yesterday"}]) == "a"


def test_compile_once_evaluate_many():
    test = parse('name contains "svc" and not isAdmin').compile(FIELDS)
    assert [test(r) for r in RECORDS] == [False, True, False, False, False]


def test_long_or_chain_evaluates():
    text = " or ".join(f'id = "{i}"' for i in range(2000)) + ' or id = "c"'
    assert ids(text) == "c"
