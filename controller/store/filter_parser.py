"""Lexer, AST and recursive-descent parser of the ``filter`` query language.

Mirrors the upstream ANTLR grammar (ZitiQl): maximal-munch lexing where bad
characters are silently dropped, whitespace-sensitive rules, and ``and``/``or``
without relative precedence (the right operand and the operand of ``not`` run
to the end of the enclosing group). Type checking and evaluation live in
``controller.store.query``; this module only knows syntax.
"""

from __future__ import annotations

from typing import Optional

from controller.errors import InvalidFilter

# NOTE(lead): the AST, rendering and lexer live in their own modules; their names are
# re-exported here because callers treat this module as the language's front door.
from controller.store.filter_ast import (  # noqa: F401
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
    Parsed,
    Path,
    SetFn,
    SubQuery,
    number_text,
    render,
)
from controller.store.filter_lexer import EOF, Token, _literal, number_literal, tokenize  # noqa: F401

MAX_DEPTH = 100  # nesting of groups/not/sub-queries; stops RecursionError early

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
