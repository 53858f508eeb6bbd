"""AST nodes of the ``filter`` language and their rendering back to filter text."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from decimal import Decimal
from typing import NamedTuple, Optional, Union

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# ---------------------------------------------------------------- AST nodes


@dataclass(frozen=True)
class Path:
    """A field path as written; ``'quoted'`` paths keep their quotes."""

    name: str

    @property
    def quoted(self) -> bool:
        return self.name.startswith("'")


@dataclass(frozen=True)
class SubQuery:
    """``from <collection> where <query>`` (internal filters only)."""

    collection: str
    where: Optional["Node"]


@dataclass(frozen=True)
class SetFn:
    """``anyOf(f)``, ``allOf(f)`` or ``count(f | subquery)`` on the left of an operator."""

    fn: str  # "anyOf" | "allOf" | "count"
    target: Union[Path, SubQuery]


@dataclass(frozen=True)
class Literal:
    kind: str  # "string" | "int" | "float" | "bool" | "datetime" | "null"
    value: object = None  # datetime values are aware UTC datetimes


@dataclass(frozen=True)
class Compare:
    lhs: Union[Path, SetFn]
    op: str  # = != < <= > >= contains "not contains" icontains "not icontains"
    value: Literal


@dataclass(frozen=True)
class In:
    lhs: Union[Path, SetFn]
    values: tuple  # of Literal; `not in` parses to Not(In(...)) as upstream does


@dataclass(frozen=True)
class Between:
    lhs: Union[Path, SetFn]
    lower: Literal
    upper: Literal


@dataclass(frozen=True)
class And:
    left: "Node"
    right: "Node"


@dataclass(frozen=True)
class Or:
    left: "Node"
    right: "Node"


@dataclass(frozen=True)
class Not:
    expr: "Node"


@dataclass(frozen=True)
class BoolConst:
    value: bool


@dataclass(frozen=True)
class BoolField:
    path: Path


@dataclass(frozen=True)
class IsEmpty:
    target: Union[Path, SubQuery]


Node = Union[Compare, In, Between, And, Or, Not, BoolConst, BoolField, IsEmpty]


class Parsed(NamedTuple):
    predicate: Optional[Node]
    sort: list  # [(field name, descending)]
    skip: Optional[int]
    limit: Optional[int]  # -1 = none


# ---------------------------------------------------------------- rendering


def render(node: Optional[Node], sort=(), skip: Optional[int] = None, limit: Optional[int] = None) -> str:
    """Filter text that parses back to the same AST (and sort/skip/limit)."""
    parts = [] if node is None else [_render(node)]
    if sort:
        parts.append("sort by " + ", ".join(f"{n} {'desc' if d else 'asc'}" for n, d in sort))
    if skip is not None:
        parts.append(f"skip {skip}")
    if limit is not None:
        parts.append("limit none" if limit == -1 else f"limit {limit}")
    return " ".join(parts)


def _render(node, negation: str = "") -> str:
    if isinstance(node, (And, Or)):
        pieces = []
        while isinstance(node, (And, Or)):  # walk the right spine: no recursion on long chains
            left = _render(node.left)
            # a compound left operand must be grouped; the right one never needs it
            pieces.append(f"({left})" if isinstance(node.left, (And, Or, Not)) else left)
            pieces.append("and" if isinstance(node, And) else "or")
            node = node.right
        return " ".join(pieces + [_render(node)])
    if isinstance(node, Not):
        if isinstance(node.expr, (In, Between)):  # the infix form reads better and parses the same
            return _render(node.expr, "not ")
        return "not " + _render(node.expr)
    if isinstance(node, Compare):
        return f"{_render_lhs(node.lhs)} {node.op} {render_literal(node.value)}"
    if isinstance(node, In):
        return f"{_render_lhs(node.lhs)} {negation}in [{', '.join(map(render_literal, node.values))}]"
    if isinstance(node, Between):
        lower, upper = render_literal(node.lower), render_literal(node.upper)
        return f"{_render_lhs(node.lhs)} {negation}between {lower} and {upper}"
    if isinstance(node, BoolConst):
        return "true" if node.value else "false"
    if isinstance(node, BoolField):
        return node.path.name
    if isinstance(node, IsEmpty):
        return f"isEmpty({_render_lhs(node.target)})"
    raise TypeError(f"not a filter node: {node!r}")


def _render_lhs(lhs) -> str:
    if isinstance(lhs, Path):
        return lhs.name
    if isinstance(lhs, SubQuery):
        return f"from {lhs.collection} where {_render(lhs.where) if lhs.where is not None else 'true'}"
    return f"{lhs.fn}({_render_lhs(lhs.target)})"


def render_literal(lit: Literal) -> str:
    if lit.kind == "string":
        escaped = lit.value.replace("\\", "\\\\").replace('"', '\\"')
        for raw, esc in (("\f", "\\f"), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t")):
            escaped = escaped.replace(raw, esc)
        return f'"{escaped}"'
    if lit.kind == "bool":
        return "true" if lit.value else "false"
    if lit.kind == "null":
        return "null"
    if lit.kind == "datetime":
        return f"datetime({datetime_text(lit.value)})"
    if lit.kind == "float":
        text = repr(float(lit.value))
        if "e" in text:  # the grammar wants e-5, not e-05
            mantissa, exp = text.split("e")
            text = f"{mantissa}e{int(exp)}"
        return text
    return str(lit.value)


def datetime_text(value: datetime.datetime) -> str:
    """RFC 3339 in UTC with microseconds only when present."""
    v = value.astimezone(datetime.timezone.utc)
    frac = f".{v.microsecond:06d}" if v.microsecond else ""
    return f"{v.year:04d}-{v.month:02d}-{v.day:02d}T{v.hour:02d}:{v.minute:02d}:{v.second:02d}{frac}Z"


def number_text(value) -> str:
    """A number as text for string comparisons (Go's FormatFloat 'f', -1 for floats)."""
    if isinstance(value, int):
        return str(value)
    text = format(Decimal(repr(value)), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text
