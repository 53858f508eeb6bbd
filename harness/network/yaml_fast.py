"""YAML loading as fast as libyaml parses: the safe loader's result, built from parser events.

PyYAML's C loader parses in C but then builds a node object per scalar and
constructs values through Python generators: for a large network file that
is ten times the parse itself. Network files are plain mappings, lists and
scalars, so :func:`load` builds them straight from the parser's events,
resolving each scalar's type exactly as the safe loader does (the same
implicit resolvers, the same constructors). Anything rarer (other tags,
merge keys, complex keys, recursive aliases, several documents, a syntax
error) starts again with the standard safe loader, so the result, or the
error, is always the safe loader's own.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml import events

from controller.gc_pause import gc_paused

#: the safe loader, in C when PyYAML was built with libyaml
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"
_SCALARS = frozenset({_NULL, "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"})
_SCALARS |= {"tag:yaml.org,2002:timestamp"}
_MAPS = frozenset({None, "!", "tag:yaml.org,2002:map"})
_SEQS = frozenset({None, "!", "tag:yaml.org,2002:seq"})
_RESOLVERS = yaml.SafeLoader.yaml_implicit_resolvers
_CONSTRUCTOR = yaml.constructor.SafeConstructor()


class _Unusual(Exception):
    """Something the fast path leaves to the standard loader."""


def load(data: bytes | str) -> Any:
    """``yaml.load(data, Loader=LOADER)``, faster for plain documents."""
    try:
        with gc_paused():  # a parsed document has no cycles to collect
            return _build(data)
    except (_Unusual, yaml.YAMLError):
        return yaml.load(data, Loader=LOADER)  # noqa: S506 - a safe loader


def _build(data: bytes | str) -> Any:
    root: list = []
    stack: list[list] = []  # open containers: [container, key] (key is _NO_KEY until read)
    anchors: dict[str, Any] = {}
    documents = 0
    for event in yaml.parse(data, Loader=LOADER):
        kind = type(event)
        if kind is events.ScalarEvent:
            value = _scalar(event)
        elif kind is events.MappingStartEvent:
            value = _container(event, {}, _MAPS)
        elif kind is events.SequenceStartEvent:
            value = _container(event, [], _SEQS)
        elif kind is events.AliasEvent:
            value = _alias(event, anchors, stack)
        elif kind is events.MappingEndEvent or kind is events.SequenceEndEvent:
            stack.pop()
            continue
        elif kind is events.DocumentStartEvent:
            documents += 1
            if documents > 1:
                raise _Unusual  # the safe loader's "expected a single document" error
            continue
        else:  # stream start and end, document end
            continue
        if kind is not events.AliasEvent and event.anchor is not None:
            if event.anchor in anchors:
                raise _Unusual  # the safe loader's "found duplicate anchor" error
            anchors[event.anchor] = value
        _attach(value, stack, root)
        if kind is events.MappingStartEvent or kind is events.SequenceStartEvent:
            stack.append([value, _NO_KEY])
    return root[0] if root else None


_NO_KEY = object()


def _attach(value: Any, stack: list[list], root: list) -> None:
    """Put ``value`` in the innermost open container (or make it the document)."""
    if not stack:
        root.append(value)
        return
    frame = stack[-1]
    container, key = frame
    if type(container) is list:
        container.append(value)
    elif key is _NO_KEY:
        if isinstance(value, (dict, list)):
            raise _Unusual  # a complex key: the safe loader refuses it in its own words
        frame[1] = value
    else:
        container[key] = value
        frame[1] = _NO_KEY


def _scalar(event: events.ScalarEvent) -> Any:
    tag, value = event.tag, event.value
    if tag is None or tag == "!":
        tag = _resolve(value, event.implicit)
    if tag == _STR:
        return value
    if tag not in _SCALARS:
        raise _Unusual  # merge keys, binary, custom tags...
    return _CONSTRUCTOR.yaml_constructors[tag](_CONSTRUCTOR, yaml.ScalarNode(tag, value))


def _resolve(value: str, implicit: tuple[bool, bool]) -> str:
    """The tag the safe loader's resolver gives an untagged scalar."""
    if not implicit[0]:
        return _STR
    for tag, pattern in _RESOLVERS.get(value[0] if value else "", ()):
        if pattern.match(value):
            return tag
    return _STR


def _container(event, empty: dict | list, plain_tags: frozenset) -> dict | list:
    if event.tag not in plain_tags:
        raise _Unusual  # !!set, !!omap, custom tags
    return empty


def _alias(event: events.AliasEvent, anchors: dict[str, Any], stack: list[list]) -> Any:
    if event.anchor not in anchors:
        raise _Unusual  # the safe loader's "found undefined alias" error
    value = anchors[event.anchor]
    if any(frame[0] is value for frame in stack):
        raise _Unusual  # a recursive structure: left to the safe loader's rules
    return value
