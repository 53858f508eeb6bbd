"""Validation by JSON Schema, with go-swagger style reasons.

The API checks request bodies with it; managers check domain data (a config's
data against its config type's schema, a posture check's type fields).

Validators are compiled once per schema. The first violation becomes a
``FieldError`` (400 ``COULD_NOT_VALIDATE`` with ``cause {field, reason, value}``).
A body is first checked by a schema compiled to Python (fastjsonschema, ~20x
faster); only a body it refuses goes through jsonschema, which decides (it may
still accept) and words the error, so replies are jsonschema's either way.
"""

from __future__ import annotations

from functools import cache, lru_cache
from typing import Any

import fastjsonschema
import orjson

from controller.clock import parse_rfc3339
from controller.errors import FieldError


def _is_datetime(value: Any) -> bool:
    if not isinstance(value, str):
        return True
    parse_rfc3339(value)
    return True


def _any_string(value: Any) -> bool:
    # The real controller's validator (gojsonschema) has no idn-hostname check, and its built-in config types
    # rely on that: intercept addresses may be wildcards (``*.example``) and CIDRs under that format.
    return True


def _is_uuid(value: Any) -> bool:
    import uuid

    if isinstance(value, str):
        uuid.UUID(value)
    return True


@cache
def _format_checker():
    # NOTE(tests): jsonschema is imported on first use: its import costs over a second of CPU
    # (it builds an IRI grammar), and a valid body never needs it (see passes_fast)
    from jsonschema import FormatChecker

    checker = FormatChecker()
    checker.checks("date-time", raises=ValueError)(_is_datetime)
    checker.checks("uuid", raises=ValueError)(_is_uuid)
    checker.checks("idn-hostname")(_any_string)
    return checker


@lru_cache(maxsize=None)
def _validator(schema_json: bytes):
    from jsonschema import Draft7Validator

    return Draft7Validator(orjson.loads(schema_json), format_checker=_format_checker())


def validator_for(schema: dict):
    return _validator(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS))


def _checks(check) -> Any:
    """A jsonschema format check as fastjsonschema takes it: a bool function."""

    def passes(value: Any) -> bool:
        try:
            return bool(check(value))
        except ValueError:
            return False

    return passes


_FAST_FORMATS = {"date-time": _checks(_is_datetime), "uuid": _checks(_is_uuid), "idn-hostname": _any_string}


@lru_cache(maxsize=None)
def _fast(schema_json: bytes):
    # only pass or fail is read (jsonschema words the error): without details it compiles and runs ~2x faster
    return fastjsonschema.compile(orjson.loads(schema_json), formats=_FAST_FORMATS, detailed_exceptions=False)


_BY_ID: dict[int, tuple[dict, Any]] = {}  # schema object -> compiled check: skips re-serializing the key
_BY_ID_MAX = 512  # entries hold their schema (so ids stay unique); transient schemas beyond this are not kept


def _fast_for(schema: dict):
    entry = _BY_ID.get(id(schema))
    if entry is not None and entry[0] is schema:
        return entry[1]
    check = _fast(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS))
    if len(_BY_ID) < _BY_ID_MAX:
        _BY_ID[id(schema)] = (schema, check)
    return check


def passes_fast(schema: dict, body: Any) -> bool:
    """True when the compiled schema accepts ``body`` (then jsonschema does too)."""
    try:
        _fast_for(schema)(body)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


def validate(schema: dict | None, body: Any, where: str = "body") -> None:
    """Raise ``FieldError`` for the first violation of ``schema`` by ``body``."""
    if schema is None or passes_fast(schema, body):
        return
    errors = sorted(validator_for(schema).iter_errors(body), key=_error_rank)
    if errors:
        raise _field_error(errors[0], where)


def _error_rank(error) -> tuple:
    # Report "required" and shallow errors first, like go-swagger's ordered checks.
    return (len(error.absolute_path), error.validator != "required", list(map(str, error.absolute_path)))


def _path(error) -> str:
    return ".".join(str(part) for part in error.absolute_path)


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if value is None:
        return "null"
    return "object"


def _field_error(error, where: str) -> FieldError:
    kind = error.validator
    field = _path(error)
    value = error.instance
    if kind == "required":
        missing = error.message.split("'")[1] if "'" in error.message else "body"
        field = f"{field}.{missing}" if field else missing
        return FieldError(field, f"{field} in {where} is required", None)
    name = field or where
    expected = error.validator_value
    if kind == "type":
        wanted = expected if isinstance(expected, str) else expected[0]
        reason = f'{name} in {where} must be of type {wanted}: "{_type_name(value)}"'
    elif kind == "enum":
        reason = f"{name} in {where} should be one of [{' '.join(str(v) for v in expected)}]"
    elif kind == "format":
        reason = f'{name} in {where} must be of type {expected}: "{value}"'
    elif kind in BOUNDS:
        reason = f"{name} in {where} should be {BOUNDS[kind].format(expected)}"
    else:
        reason = f"{name} in {where}: {error.message}"
    return FieldError(name, reason, value)


#: go-openapi's wording of a broken bound, after "<field> in <where> should be"
BOUNDS = {
    "maxLength": "at most {} chars long",
    "minLength": "at least {} chars long",
    "maximum": "less than or equal to {}",
    "minimum": "greater than or equal to {}",
    "minItems": "at least {} items",
}
