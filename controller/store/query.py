"""The ``filter`` query language: fields, type checking, compiled predicates, sorting and paging.

Syntax lives in :mod:`controller.store.filter_parser`; here a parsed filter is checked
against a :class:`FieldSet` and compiled once into closures, then :func:`list_page`
counts matches and selects one page (heap selection when the page is small).
"""

from __future__ import annotations

import datetime
import heapq
import re
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any, Callable, Iterable, Optional

from controller import errors
from controller.clock import parse_rfc3339
from controller.errors import BadRequest, InvalidFilter
from controller.store.filter_parser import (  # noqa: F401  (node types re-exported for callers)
    And,
    Between,
    BoolConst,
    BoolField,
    Compare,
    In,
    IsEmpty,
    Literal,
    Node,
    Not,
    Or,
    Path,
    SetFn,
    SubQuery,
    number_text,
    parse_text,
    render,
)

UNLIMITED = 9223372036854775807
DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET, MAX_SORT_KEYS = 10, 500, 100000, 5

Predicate = Callable[[dict], bool]


# ---------------------------------------------------------------- fields


@dataclass(frozen=True)
class Field:
    name: str
    type: str  # "string" | "int" | "float" | "bool" | "datetime" | "set" ("any" for tags.<key>)
    get: Callable[[dict], Any]
    sortable: bool = True
    #: computed from other tables or state: indexes of this table cannot follow it
    derived: bool = False

    def __post_init__(self):
        if self.type == "set":
            object.__setattr__(self, "sortable", False)


def _default_tags(record: dict):
    return record.get("tags")


class FieldSet:
    """The public fields of one entity type. ``tags=False`` disables ``tags.<key>`` paths."""

    def __init__(self, fields: Iterable[Field], *, tags: Callable[[dict], dict | None] | None = None):
        self._fields: dict[str, Field] = {
            "id": Field("id", "string", lambda r: r.get("id")),
            "createdAt": Field("createdAt", "datetime", lambda r: r.get("created_at")),
            "updatedAt": Field("updatedAt", "datetime", lambda r: r.get("updated_at")),
        }
        for f in fields:
            self._fields[f.name] = f
        self._tags = None if tags is False else (tags or _default_tags)

    def names(self) -> list[str]:
        return list(self._fields) + (["tags"] if self._tags else [])

    def __contains__(self, name) -> bool:
        return name in self._fields

    def get(self, name: str) -> Field | None:
        return self._fields.get(name)

    def resolve(self, name: str) -> Field:
        """A declared field or a ``tags.<key>`` field; InvalidFilter otherwise."""
        found = self._fields.get(name)
        if found is not None:
            return found
        if self._tags and name.startswith("tags.") and len(name) > 5:
            key, tags = name[5:], self._tags

            def get_tag(record):
                values = tags(record)
                return values.get(key) if isinstance(values, dict) else None

            return Field(name, "any", get_tag, sortable=False)
        raise InvalidFilter(f"unknown symbol '{name}'")


# ---------------------------------------------------------------- value normalisation

# text normalisers: comparable text, or None when the value is missing or of another type


def _as_num_text(v):
    return number_text(v) if type(v) in (int, float) else None


def _as_any_text(v):
    return v if type(v) is str else _as_num_text(v)


def dt_key(value) -> str | None:
    """A fixed-width text key ordering datetimes chronologically (microsecond precision)."""
    if type(value) is str:
        if len(value) == 24 and value[23] == "Z" and value[19] == "." and value[10] == "T":
            return value[:23] + "000"  # canonical "YYYY-MM-DDTHH:MM:SS.mmmZ": no parsing needed
        try:
            value = parse_rfc3339(value)
        except (ValueError, OverflowError):
            return None
    if not isinstance(value, datetime.datetime):
        return None
    if value.tzinfo is not None:
        try:
            value = value.astimezone(datetime.timezone.utc)
        except OverflowError:
            return None
    return (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:"
        f"{value.minute:02d}:{value.second:02d}.{value.microsecond:06d}"
    )


_NORM = {"datetime": dt_key, "text": _as_num_text, "anytext": _as_any_text}
_ANY_TYPE = {"string": "string", "int": "num", "float": "num", "bool": "bool", "datetime": "datetime"}
_FIELD_TYPE = {"string": "string", "int": "num", "float": "num", "bool": "bool", "datetime": "datetime"}
_TYPES = {"string": (str,), "num": (int, float), "bool": (bool,)}  # value types compared as they are


# ---------------------------------------------------------------- type checking


def _operand(vtype: str, lit: Literal, what: str):
    """The literal converted for comparison with values of ``vtype``; InvalidFilter if it cannot be."""
    kind = lit.kind
    if vtype in ("string", "text", "anytext") and kind in ("string", "int", "float"):
        return lit.value if kind == "string" else number_text(lit.value)  # `name = 5` is `name = "5"`
    if vtype == "num" and kind in ("int", "float"):
        return lit.value
    if vtype == "bool" and kind == "bool":
        return lit.value
    if vtype == "datetime" and kind == "datetime":
        return dt_key(lit.value)
    raise _mismatch(what, vtype, kind)


def _mismatch(what: str, vtype: str, kind: str) -> InvalidFilter:
    shown = {"num": "number", "text": "number", "anytext": "any"}.get(vtype, vtype)
    return InvalidFilter(f"operation {what} is not supported with operands types {shown}, {kind}")


def _value_type(ftype: str, lit: Literal, op: str, what: str) -> str:
    """How values are compared: string, num, bool, datetime, or text/anytext for contains."""
    vtype = _ANY_TYPE[lit.kind] if ftype == "any" else _FIELD_TYPE.get(ftype)
    if vtype is None:
        raise InvalidFilter(f"operation {what} is not supported on a {ftype} field")
    if op.endswith("contains"):
        if vtype not in ("string", "num") or (op.endswith("icontains") and lit.kind != "string"):
            raise _mismatch(what, vtype, lit.kind)
        if ftype == "any":
            return "anytext"  # a tag's text or number is searched as text
        return "string" if vtype == "string" else "text"  # numeric fields are searched as text
    if vtype == "bool" and op not in ("=", "!="):
        raise _mismatch(what, vtype, lit.kind)
    if op == "between" and vtype not in ("num", "datetime"):
        raise _mismatch(what, vtype, lit.kind)
    return vtype


def _spec(ftype: str, node, what: str) -> tuple[str, str, Any]:
    """(value type, op, operand) of a Compare/In/Between applied to values of ``ftype``."""
    if isinstance(node, In):
        vtype = _value_type(ftype, node.values[0], "in", what)
        if vtype == "bool":
            raise _mismatch(what, vtype, node.values[0].kind)
        return vtype, "in", frozenset(_operand(vtype, lit, what) for lit in node.values)
    if isinstance(node, Between):
        vtype = _value_type(ftype, node.lower, "between", what)
        return vtype, "between", (_operand(vtype, node.lower, what), _operand(vtype, node.upper, what))
    vtype = _value_type(ftype, node.value, node.op, what)
    x = _operand(vtype, node.value, what)
    return vtype, node.op, (x.lower() if node.op.endswith("icontains") else x)


# ---------------------------------------------------------------- value tests


def _identity(v):
    return v


def _record_test(vtype: str, op: str, x, get) -> Predicate:
    """record -> bool, one closure per operator with the type check inlined.

    A missing or mistyped value satisfies only the negative operators (!=, not contains).
    """
    types = _TYPES.get(vtype)
    if types is None:  # datetime/text values are normalised to comparable text (or None) first
        norm, raw, types = _NORM[vtype], get, (str,)
        get = lambda r: norm(raw(r))  # noqa: E731
    if op == "=":
        return lambda r: type(v := get(r)) in types and v == x
    if op == "!=":
        return lambda r: type(v := get(r)) not in types or v != x
    if op == "<":
        return lambda r: type(v := get(r)) in types and v < x
    if op == "<=":
        return lambda r: type(v := get(r)) in types and v <= x
    if op == ">":
        return lambda r: type(v := get(r)) in types and v > x
    if op == ">=":
        return lambda r: type(v := get(r)) in types and v >= x
    if op == "in":
        return lambda r: type(v := get(r)) in types and v in x
    if op == "between":
        lo, hi = x
        return lambda r: type(v := get(r)) in types and lo <= v < hi  # upper bound excluded
    if op == "contains":
        return lambda r: type(v := get(r)) in types and x in v
    if op == "not contains":
        return lambda r: type(v := get(r)) not in types or x not in v
    if op == "icontains":
        return lambda r: type(v := get(r)) in types and x in v.lower()
    return lambda r: type(v := get(r)) not in types or x not in v.lower()  # not icontains


def _set_test(fn: str, vtype: str, op: str, x, get) -> Predicate:
    """record -> bool for anyOf/allOf over a set field's (string) elements."""
    if fn == "anyOf" and vtype == "string" and op == "=":
        return lambda r: x in (get(r) or ())
    if fn == "anyOf" and vtype == "string" and op == "in":
        return lambda r: not x.isdisjoint(get(r) or ())
    test = _record_test(vtype, op, x, _identity)
    if fn == "anyOf":
        return lambda r: any(map(test, get(r) or ()))  # false on an empty set
    return lambda r: all(map(test, get(r) or ()))  # allOf: true on an empty set


def _all_of(parts: list) -> Predicate:
    """Short-circuit AND of predicates as a balanced tree of closures (shallow, no generator)."""
    if len(parts) == 1:
        return parts[0]
    a, b = _all_of(parts[: len(parts) // 2]), _all_of(parts[len(parts) // 2 :])
    return lambda r: a(r) and b(r)


def _any_of(parts: list) -> Predicate:
    if len(parts) == 1:
        return parts[0]
    a, b = _any_of(parts[: len(parts) // 2]), _any_of(parts[len(parts) // 2 :])
    return lambda r: a(r) or b(r)


# ---------------------------------------------------------------- compiler


def _never(_record) -> bool:
    return False


def _always(_record) -> bool:
    return True


class _Compiler:
    def __init__(self, fields: FieldSet):
        self.fields = fields

    def compile(self, node) -> Predicate:
        if isinstance(node, (And, Or)):
            return self.junction(node)
        if isinstance(node, Not):
            inner = self.compile(node.expr)
            return lambda r: not inner(r)
        if isinstance(node, BoolConst):
            return _always if node.value else _never
        if isinstance(node, BoolField):
            return self.bool_field(node.path)
        if isinstance(node, IsEmpty):
            get = self.set_field(node.target, "isEmpty")
            return _never if get is None else (lambda r: not get(r))
        if isinstance(node, Compare) and node.value.kind == "null":
            return self.null_test(node)
        if isinstance(node, (Compare, In, Between)):
            return self.operation(node)
        raise InvalidFilter(f"unsupported filter node {type(node).__name__}")

    def junction(self, node) -> Predicate:
        # flatten the right-nested chain so long `or` lists need no deep recursion
        kind, parts = type(node), []
        while isinstance(node, kind):
            parts.append(self.compile(node.left))
            node = node.right
        parts.append(self.compile(node))
        return _all_of(parts) if kind is And else _any_of(parts)

    def scalar(self, path: Path, what: str) -> Field:
        f = self.fields.resolve(path.name)
        if f.type == "set":
            raise InvalidFilter(f"set field {path.name} must be used inside a set function: {what}")
        return f

    def set_field(self, target, what: str):
        """The set field's getter; None for a quoted (never matching) path."""
        if isinstance(target, SubQuery):
            raise InvalidFilter(f"unknown symbol '{target.collection}'")
        if target.quoted:
            return None
        f = self.fields.resolve(target.name)
        if f.type != "set":
            raise InvalidFilter(f"{what} requires a set field, but {target.name} is a {f.type} field")
        return f.get

    def operation(self, node) -> Predicate:
        lhs, what = node.lhs, render(node)
        if isinstance(lhs, Path):
            if lhs.quoted:
                return _never
            f = self.scalar(lhs, what)
            return _record_test(*_spec(f.type, node, what), f.get)
        get = self.set_field(lhs.target, lhs.fn)
        if lhs.fn == "count":
            spec = _spec("int", node, what)
            return _never if get is None else _record_test(*spec, lambda r: len(get(r) or ()))
        spec = _spec("string", node, what)  # set elements are strings
        return _never if get is None else _set_test(lhs.fn, *spec, get)

    def null_test(self, node: Compare) -> Predicate:
        if node.op not in ("=", "!=") or not isinstance(node.lhs, Path):
            raise InvalidFilter(f"operation {render(node)} is not supported with null")
        if node.lhs.quoted:
            return _never
        get = self.scalar(node.lhs, render(node)).get
        if node.op == "=":
            return lambda r: get(r) is None
        return lambda r: get(r) is not None

    def bool_field(self, path: Path) -> Predicate:
        if path.quoted:
            return _never
        f = self.scalar(path, path.name)
        if f.type not in ("bool", "any"):
            raise InvalidFilter(f"symbol {path.name} is of type {f.type}, not bool")
        get = f.get
        return lambda r: get(r) is True


def compile_predicate(node: Optional[Node], fields: FieldSet) -> Optional[Predicate]:
    """Compile an AST to a predicate (None when it matches everything)."""
    if node is None or node == BoolConst(True):
        return None
    try:
        return _Compiler(fields).compile(node)
    except RecursionError as ex:
        raise InvalidFilter("filter nests too deeply") from ex


# ---------------------------------------------------------------- sorting


def sort_fields(sort: list, fields: FieldSet, error=InvalidFilter) -> list[tuple[Field, bool]]:
    """[(field, descending)]: up to 5 keys, then the ``id asc`` tie-breaker."""
    keys = []
    for name, desc in list(sort)[:MAX_SORT_KEYS]:
        f = fields.get(name)
        if f is None or not f.sortable or f.type not in _FIELD_TYPE:
            raise error(f"invalid sort field '{name}'")
        keys.append((f, bool(desc)))
    keys.append((fields.get("id"), False))
    return keys


def _values(records: list, f: Field) -> list:
    """Normalised sort values of ``f`` (None = null), one pass with the type check inlined."""
    get, vtype = f.get, _FIELD_TYPE[f.type]
    if vtype == "string":
        return [v if type(v) is str else None for v in map(get, records)]
    if vtype == "num":
        return [v if type(v) in (int, float) else None for v in map(get, records)]
    if vtype == "bool":
        return [v if type(v) is bool else None for v in map(get, records)]
    return [dt_key(v) for v in map(get, records)]


def _sort_all(records: list, keys: list) -> list:
    order = list(range(len(records)))
    for f, desc in reversed(keys):  # stable sorts, least significant key first
        vals = _values(records, f)
        order.sort(key=lambda i: (0,) if vals[i] is None else (1, vals[i]), reverse=desc)  # nulls first asc
    return [records[i] for i in order]


def _candidates(records: list, first: tuple[Field, bool], k: int) -> list:
    """The records that can be among the first ``k``: the best k by the first key plus its ties."""
    f, desc = first
    vals = _values(records, f)
    nulls = [r for r, v in zip(records, vals) if v is None] if None in vals else []
    wanted = k if desc else k - len(nulls)  # nulls come first ascending, last descending
    if wanted <= 0:
        return nulls
    if nulls:
        pairs = ((v, i) for i, v in enumerate(vals) if v is not None)
    else:
        pairs = zip(vals, range(len(vals)))  # compared in C, no key function
    best = (heapq.nlargest if desc else heapq.nsmallest)(wanted, pairs)
    if len(best) < wanted:
        return records
    edge = best[-1][0]
    if sum(1 for v, _ in best if v == edge) == vals.count(edge):  # no tie left out
        chosen = [records[i] for _, i in best]
    elif desc:
        chosen = [r for r, v in zip(records, vals) if v is not None and v >= edge]
    else:
        chosen = [r for r, v in zip(records, vals) if v is not None and v <= edge]
    return chosen if desc else nulls + chosen


def select_page(records: list, keys: list, offset: int, limit: Optional[int]) -> list:
    """records[offset:offset+limit] in sort order, sorting only candidates when the page is small."""
    end = len(records) if limit is None else min(len(records), offset + limit)
    if offset >= end:
        return []
    if end * 4 < len(records):
        records = _candidates(records, keys[0], end)
    return _sort_all(records, keys)[offset:end]


# ---------------------------------------------------------------- queries and pages


@dataclass
class Query:
    predicate: Optional[Node] = None
    sort: list = dc_field(default_factory=list)
    skip: Optional[int] = None
    limit: Optional[int] = None  # -1 means none

    def compile(self, fields: FieldSet) -> Predicate:
        """Validate names/types (and sort fields) and return the record predicate."""
        sort_fields(self.sort, fields)
        pred = compile_predicate(self.predicate, fields)
        return pred or _always

    def __str__(self) -> str:
        return render(self.predicate, self.sort, self.skip, self.limit)


def parse(text: str | None) -> Query:
    """Parse ``filter`` text; None or "" match everything. Raises InvalidFilter."""
    if not text:
        return Query()
    if not isinstance(text, str):
        raise InvalidFilter("filter must be text")
    try:
        return Query(*parse_text(text))
    except RecursionError as ex:
        raise InvalidFilter("filter nests too deeply") from ex


@dataclass
class Page:
    items: list
    limit: int
    offset: int
    total: int

    def pagination(self) -> dict:
        return {"limit": self.limit, "offset": self.offset, "totalCount": self.total}


@dataclass
class Listing:
    """A page of records as a list reply carries it: items, ``meta.pagination``, ``meta.filterableFields``."""

    items: list
    pagination: dict
    filterable: list[str] | None = None


_INT_TEXT = re.compile(r"[+-]?[0-9]+\Z")


def _int_param(value, name: str) -> Optional[int]:
    """A raw ?limit / ?offset value as int; BadRequest(INVALID_PAGINATION) if not an integer."""
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and len(value) <= 20 and _INT_TEXT.match(value):
        number = int(value)
    else:
        number = None
    if number is None or not -(2**63) <= number < 2**63:
        raise BadRequest(
            errors.INVALID_PAGINATION, None, {"code": errors.UNHANDLED, "message": f"invalid {name}: {value!r}"}
        )
    return number


def effective_limit(limit: Optional[int]) -> Optional[int]:
    """None = unlimited; default 10 when absent, 0 or below -1; at most 500."""
    if limit == -1:
        return None
    if limit is None or limit == 0 or limit < -1:
        return DEFAULT_LIMIT
    return min(limit, MAX_LIMIT)


def effective_offset(offset: Optional[int]) -> int:
    return min(max(offset or 0, 0), MAX_OFFSET)


def _sort_param(sort: str, fields: FieldSet) -> list:
    """Keys from a raw ?sort value ("name desc, id"); BadRequest(INVALID_SORT_IDENTIFIER) if bad."""

    def bad(detail):
        return BadRequest(errors.INVALID_SORT_IDENTIFIER, None, {"code": errors.UNHANDLED, "message": detail})

    try:
        parsed = parse_text("sort by " + str(sort))
    except InvalidFilter as ex:
        raise bad(ex.detail) from ex
    if parsed.predicate is not None or parsed.skip is not None or parsed.limit is not None:
        raise bad(f"invalid sort: {sort}")
    return sort_fields(parsed.sort, fields, error=bad)


def list_page(
    records: Iterable[dict],
    fields: FieldSet,
    *,
    filter: str | None = None,
    limit: str | int | None = None,
    offset: str | int | None = None,
    sort: str | None = None,
    extra: Callable[[dict], bool] | None = None,
) -> Page:
    """Filter, count, sort and page ``records`` as a list endpoint does (section 1.6)."""
    req_limit, req_offset = _int_param(limit, "limit"), _int_param(offset, "offset")
    query = parse(filter)
    keys = sort_fields(query.sort, fields)
    pred = compile_predicate(query.predicate, fields)
    if not query.sort and sort:
        keys = _sort_param(sort, fields)
    page_limit = effective_limit(query.limit if query.limit is not None else req_limit)
    page_offset = effective_offset(query.skip if query.skip is not None else req_offset)
    if pred is not None and extra is not None:
        matched = [r for r in records if extra(r) and pred(r)]
    elif pred is not None or extra is not None:
        test = pred or extra
        matched = [r for r in records if test(r)]
    else:
        matched = list(records)
    items = select_page(matched, keys, page_offset, page_limit)
    return Page(items, UNLIMITED if page_limit is None else page_limit, page_offset, len(matched))
