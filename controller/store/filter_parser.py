"""Lexer, AST and recursive-descent parser of the ``filter`` query language.

Mirrors the upstream ANTLR grammar (ZitiQl): maximal-munch lexing where bad
characters are silently dropped, whitespace-sensitive rules, and ``and``/``or``
without relative precedence (the right operand and the operand of ``not`` run
to the end of the enclosing group). Type checking and evaluation live in
``controller.store.query``; this module only knows syntax.
"""
from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import NamedTuple, Optional, Union

from controller.errors import InvalidFilter

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_DEPTH = 100  # nesting of groups/not/sub-queries; stops RecursionError early

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


# ---------------------------------------------------------------- lexer


class Token(NamedTuple):
    kind: str
    text: str
    pos: int


EOF = "EOF"
_WS_CHARS = " \n\t\r"
_PUNCT = {"(": "LPAREN", ")": "RPAREN", "[": "LBRACKET", "]": "RBRACKET", ",": "COMMA", "=": "EQ"}
_KEYWORDS = {
    "and": "AND", "or": "OR", "contains": "CONTAINS", "icontains": "ICONTAINS", "in": "IN",
    "between": "BETWEEN", "true": "BOOL", "false": "BOOL", "allof": "ALL_OF", "anyof": "ANY_OF",
    "count": "COUNT", "isempty": "ISEMPTY", "null": "NULL", "not": "NOT", "asc": "ASC", "desc": "DESC",
    "sort": "SORT", "by": "BY", "skip": "SKIP", "limit": "LIMIT", "none": "NONE", "where": "WHERE",
    "from": "FROM",
}
# years are bounded to 9 digits (Go only parses 4): keeps lexing linear on long digit runs
_RFC = (
    r"[0-9]{1,9}-(?:0[1-9]|1[012])-(?:0[1-9]|[12][0-9]|3[01])[tT](?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)"
    r"(?:\.[0-9]+)?(?:[zZ]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
)
_RE_RFC = re.compile(_RFC)
_RE_DATETIME = re.compile(r"datetime\([ \n\t\r]*(" + _RFC + r")[ \n\t\r]*\)")
_RE_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?(?:0|[1-9][0-9]*))?")
_RE_STRING = re.compile(r'"(?:\\["\\fnrt]|[^"\\\x00-\x1f])*"')
_RE_STRING_PREFIX = re.compile(r'"(?:\\["\\fnrt]|[^"\\\x00-\x1f])*\\?')
_RE_IDENT = re.compile(r"[A-Za-z][A-Za-z_]*(?:\.[A-Za-z][A-Za-z_-]*)*")
_RE_QIDENT = re.compile(r"'[A-Za-z][A-Za-z_]*(?:\.[A-Za-z][A-Za-z_-]*)*'")
_RE_QIDENT_PREFIX = re.compile(r"'(?:[A-Za-z][A-Za-z_]*(?:\.[A-Za-z][A-Za-z_-]*)*\.?)?")
# `not contains` etc. are single tokens upstream; `not in` allows exactly one whitespace char
_RE_NOT_OP = re.compile(r"not(?:[ \n\t\r]+(contains|icontains|between)|[ \n\t\r](in))", re.IGNORECASE)
_ESCAPES = {'"': '"', "\\": "\\", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens (WS kept: the grammar is whitespace-sensitive)."""
    tokens, pos, end = [], 0, len(text)
    while pos < end:
        kind, length = _match_at(text, pos)
        if kind is None:
            # like ANTLR's lexer recovery: drop the viable prefix and the char it failed on
            pos = min(end, pos + length + 1)
            continue
        tokens.append(Token(kind, text[pos:pos + length], pos))
        pos += length
    tokens.append(Token(EOF, "<EOF>", end))
    return tokens


def _match_at(text: str, pos: int) -> tuple[Optional[str], int]:
    """Longest token at ``pos`` as (kind, length), or (None, viable prefix length)."""
    c = text[pos]
    if c in _WS_CHARS:
        return "WS", 1
    if c in _PUNCT:
        return _PUNCT[c], 1
    nxt = text[pos + 1:pos + 2]
    if c in "<>":
        return ("LT" if c == "<" else "GT"), (2 if nxt == "=" else 1)
    if c == "!":
        return ("EQ", 2) if nxt == "=" else (None, 1)
    if c == '"':
        return _regex_token("STRING", _RE_STRING, _RE_STRING_PREFIX, text, pos)
    if c == "'":
        return _regex_token("IDENTIFIER", _RE_QIDENT, _RE_QIDENT_PREFIX, text, pos)
    if c == "-" or "0" <= c <= "9":
        return _number_token(text, pos)
    if c.isascii() and c.isalpha():
        return _word_token(text, pos)
    return None, 0


def _regex_token(kind, full, prefix, text, pos):
    m = full.match(text, pos)
    if m:
        return kind, m.end() - pos
    return None, prefix.match(text, pos).end() - pos


def _number_token(text, pos):
    num = _RE_NUMBER.match(text, pos)
    rfc = _RE_RFC.match(text, pos) if text[pos] != "-" else None
    if rfc and (not num or rfc.end() > num.end()):
        return "RFC3339_DATE_TIME", rfc.end() - pos
    if num:
        return "NUMBER", num.end() - pos
    return None, 1  # a lone '-': the next char is consumed by recovery too


def _word_token(text, pos):
    word = _RE_IDENT.match(text, pos).group()
    kind, length = _KEYWORDS.get(word.lower(), "IDENTIFIER"), len(word)
    multi = _RE_NOT_OP.match(text, pos) if word[:3].lower() == "not" else None
    if multi and multi.end() - pos > length:
        op = (multi.group(1) or multi.group(2)).lower()
        kind, length = _KEYWORDS[op], multi.end() - pos
    dt = _RE_DATETIME.match(text, pos) if word == "datetime" else None
    if dt and dt.end() - pos > length:
        kind, length = "DATETIME", dt.end() - pos
    return kind, length


# ---------------------------------------------------------------- literals


def _unescape(token_text: str) -> str:
    body = token_text[1:-1]
    if "\\" not in body:
        return body
    return re.sub(r'\\(["\\fnrt])', lambda m: _ESCAPES[m.group(1)], body)


def number_literal(text: str) -> Literal:
    """NUMBER text -> int literal when it parses as int64, else float (as upstream)."""
    if re.fullmatch(r"-?[0-9]{1,19}", text):  # longer cannot be int64 (and int() of huge text raises)
        value = int(text)
        if INT64_MIN <= value <= INT64_MAX:
            return Literal("int", value)
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise InvalidFilter(f"could not parse number as float or int: {text}")
    return Literal("float", value)


_RE_DT_PARTS = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?(Z|[+-][0-9]{2}:[0-9]{2})\Z"
)


def datetime_literal(token_text: str) -> Literal:
    """``datetime(...)`` token -> UTC datetime literal; strict RFC 3339 like Go's time.Parse."""
    inner = token_text[len("datetime("):-1].strip(_WS_CHARS)
    m = _RE_DT_PARTS.match(inner)
    if not m:
        raise InvalidFilter(f'parsing time "{inner}" as RFC3339 failed')
    y, mo, d, h, mi, s, frac, zone = m.groups()
    try:
        micro = int((frac or "0")[:6].ljust(6, "0"))
        tz = datetime.timezone.utc
        if zone != "Z":
            sign = 1 if zone[0] == "+" else -1
            tz = datetime.timezone(sign * datetime.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
        value = datetime.datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), micro, tzinfo=tz)
        return Literal("datetime", value.astimezone(datetime.timezone.utc))
    except (ValueError, OverflowError) as ex:
        raise InvalidFilter(f'parsing time "{inner}": {ex}') from ex


def _literal(tok: Token) -> Literal:
    if tok.kind == "STRING":
        return Literal("string", _unescape(tok.text))
    if tok.kind == "NUMBER":
        return number_literal(tok.text)
    if tok.kind == "DATETIME":
        return datetime_literal(tok.text)
    if tok.kind == "BOOL":
        return Literal("bool", tok.text.lower() == "true")
    return Literal("null", None)


# ---------------------------------------------------------------- parser


def parse_text(text: str) -> Parsed:
    """Parse a whole filter; raise InvalidFilter on any syntax error."""
    return _Parser(text).start()


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = tokenize(text)
        self.i = 0
        self.depth = 0

    # -- token helpers
    def peek(self) -> Token:
        return self.toks[self.i]

    def ws(self) -> int:
        start = self.i
        while self.toks[self.i].kind == "WS":
            self.i += 1
        return self.i - start

    def ws_plus(self) -> None:
        if not self.ws():
            self.fail()

    def expect(self, *kinds: str) -> Token:
        tok = self.toks[self.i]
        if tok.kind not in kinds:
            self.fail(tok)
        self.i += 1
        return tok

    def ahead(self, kinds, min_ws: int = 1) -> bool:
        """True (and WS consumed) when ``WS{min_ws,} kinds`` follows; else nothing consumed."""
        save = self.i
        if self.ws() >= min_ws and self.peek().kind in kinds:
            return True
        self.i = save
        return False

    def fail(self, tok: Optional[Token] = None):
        tok = tok or self.peek()
        line = self.text.count("\n", 0, tok.pos) + 1
        col = tok.pos - (self.text.rfind("\n", 0, tok.pos) + 1)
        raise InvalidFilter(
            f'Unexpected symbol: "{tok.text}" at line: {line} column: {col}. '
            f"line: {line}, column: {col}, symbol: {tok.text}"
        )

    def nest(self, delta: int) -> None:
        self.depth += delta
        if self.depth > MAX_DEPTH:
            raise InvalidFilter(f"filter nests deeper than {MAX_DEPTH} levels")

    # -- grammar
    def start(self) -> Parsed:
        self.ws()
        parsed = self.query()
        self.ws()
        if self.peek().kind != EOF:
            self.fail()
        return parsed

    def query(self) -> Parsed:
        predicate, sort, skip, limit = None, [], None, None
        started = self.peek().kind not in ("SORT", "SKIP", "LIMIT")
        if started:
            predicate = self.bool_expr()
        if self.ahead(("SORT",), 1 if started else 0):
            sort, started = self.sort_by(), True
        if self.ahead(("SKIP",), 1 if started else 0):
            skip, started = self.int_clause("skip"), True
        if self.ahead(("LIMIT",), 1 if started else 0):
            limit, started = self.int_clause("limit"), True
        return Parsed(predicate, sort, skip, limit)

    def bool_expr(self) -> Node:
        # and/or are right-associative with no precedence: fold the chain from the right
        operands, ops = [self.primary()], []
        while self.ahead(("AND", "OR")):
            ops.append(self.expect("AND", "OR").kind)
            self.ws_plus()
            operands.append(self.primary())
        node = operands.pop()
        while ops:
            node = (And if ops.pop() == "AND" else Or)(operands.pop(), node)
        return node

    def primary(self) -> Node:
        tok = self.peek()
        if tok.kind == "LPAREN":
            self.i += 1
            self.nest(1)
            self.ws()
            node = self.bool_expr()
            self.ws()
            self.expect("RPAREN")
            self.nest(-1)
            return node
        if tok.kind == "NOT":
            self.i += 1
            self.ws_plus()
            self.nest(1)
            node = Not(self.bool_expr())
            self.nest(-1)
            return node
        if tok.kind == "BOOL":
            self.i += 1
            return BoolConst(tok.text.lower() == "true")
        if tok.kind == "ISEMPTY":
            self.i += 1
            return IsEmpty(self.call_args(self.set_expr))
        if tok.kind in ("IDENTIFIER", "ALL_OF", "ANY_OF", "COUNT"):
            return self.operation()
        self.fail(tok)

    def call_args(self, inner):
        self.expect("LPAREN")
        self.ws()
        value = inner()
        self.ws()
        self.expect("RPAREN")
        return value

    def lhs(self):
        tok = self.expect("IDENTIFIER", "ALL_OF", "ANY_OF", "COUNT")
        if tok.kind == "IDENTIFIER":
            return Path(tok.text)
        if tok.kind == "COUNT":
            return SetFn("count", self.call_args(self.set_expr))
        fn = "allOf" if tok.kind == "ALL_OF" else "anyOf"
        return SetFn(fn, Path(self.call_args(lambda: self.expect("IDENTIFIER")).text))

    def set_expr(self):
        if self.peek().kind != "FROM":
            return Path(self.expect("IDENTIFIER").text)
        self.i += 1
        self.ws_plus()
        collection = self.expect("IDENTIFIER").text
        self.ws_plus()
        self.expect("WHERE")
        self.ws_plus()
        self.nest(1)
        where = self.query().predicate  # sort/skip/limit of a sub-query mean nothing here
        self.nest(-1)
        return SubQuery(collection, where)

    def operation(self) -> Node:
        lhs = self.lhs()
        save = self.i
        spaced = self.ws() > 0
        kind = self.peek().kind
        if kind == "IN" and spaced:
            return self.in_op(lhs)
        if kind == "BETWEEN" and spaced:
            return self.between_op(lhs)
        if kind in ("LT", "GT", "EQ"):
            op = self.expect(kind).text
            self.ws()
            allowed = ("STRING", "NUMBER", "DATETIME") + (("BOOL", "NULL") if kind == "EQ" else ())
            return Compare(lhs, op, _literal(self.expect(*allowed)))
        if kind in ("CONTAINS", "ICONTAINS"):
            text = self.expect(kind).text.lower()
            op = ("not " if text.startswith("not") else "") + kind.lower()
            self.ws_plus()
            allowed = ("STRING", "NUMBER") if kind == "CONTAINS" else ("STRING",)
            return Compare(lhs, op, _literal(self.expect(*allowed)))
        if isinstance(lhs, Path):
            self.i = save
            return BoolField(lhs)
        self.fail()

    def in_op(self, lhs) -> Node:
        negated = self.expect("IN").text.lower().startswith("not")
        self.ws_plus()
        self.expect("LBRACKET")
        self.ws()
        first = self.expect("STRING", "NUMBER", "DATETIME")
        values = [_literal(first)]
        while self.ahead(("COMMA",), 0):
            self.i += 1
            self.ws()
            values.append(_literal(self.expect(first.kind)))
        self.ws()
        self.expect("RBRACKET")
        node = In(lhs, tuple(values))
        return Not(node) if negated else node

    def between_op(self, lhs) -> Node:
        negated = self.expect("BETWEEN").text.lower().startswith("not")
        self.ws_plus()
        lower = self.expect("NUMBER", "DATETIME")
        self.ws_plus()
        self.expect("AND")
        self.ws_plus()
        upper = self.expect(lower.kind)
        node = Between(lhs, _literal(lower), _literal(upper))
        return Not(node) if negated else node

    def sort_by(self) -> list:
        self.expect("SORT")
        self.ws_plus()
        self.expect("BY")
        self.ws_plus()
        fields = [self.sort_field()]
        while self.ahead(("COMMA",), 0):
            self.i += 1
            self.ws()
            fields.append(self.sort_field())
        return fields

    def sort_field(self) -> tuple[str, bool]:
        name = self.expect("IDENTIFIER").text
        if self.ahead(("ASC", "DESC")):
            return name, self.expect("ASC", "DESC").kind == "DESC"
        return name, False

    def int_clause(self, what: str) -> int:
        self.expect(what.upper())
        self.ws_plus()
        tok = self.expect("NUMBER", "NONE") if what == "limit" else self.expect("NUMBER")
        if tok.kind == "NONE":
            return -1
        lit = number_literal(tok.text)
        if lit.kind != "int":
            raise InvalidFilter(f"expected integer value for {what}, but got {tok.text}")
        return lit.value


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
