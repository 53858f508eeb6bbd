"""Lexer and literals of the ``filter`` language (maximal munch; bad characters dropped)."""

from __future__ import annotations

import datetime
import re
from typing import NamedTuple, Optional

from controller.errors import InvalidFilter
from controller.store.filter_ast import INT64_MAX, INT64_MIN, Literal

# ---------------------------------------------------------------- lexer


class Token(NamedTuple):
    kind: str
    text: str
    pos: int


EOF = "EOF"
_WS_CHARS = " \n\t\r"
_PUNCT = {"(": "LPAREN", ")": "RPAREN", "[": "LBRACKET", "]": "RBRACKET", ",": "COMMA", "=": "EQ"}
_KEYWORDS = {
    "and": "AND",
    "or": "OR",
    "contains": "CONTAINS",
    "icontains": "ICONTAINS",
    "in": "IN",
    "between": "BETWEEN",
    "true": "BOOL",
    "false": "BOOL",
    "allof": "ALL_OF",
    "anyof": "ANY_OF",
    "count": "COUNT",
    "isempty": "ISEMPTY",
    "null": "NULL",
    "not": "NOT",
    "asc": "ASC",
    "desc": "DESC",
    "sort": "SORT",
    "by": "BY",
    "skip": "SKIP",
    "limit": "LIMIT",
    "none": "NONE",
    "where": "WHERE",
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
        tokens.append(Token(kind, text[pos : pos + length], pos))
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
    nxt = text[pos + 1 : pos + 2]
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
    inner = token_text[len("datetime(") : -1].strip(_WS_CHARS)
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
