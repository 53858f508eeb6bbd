"""Writing values into the controller's filter language (``controller/store/filter_lexer.py``)."""

from __future__ import annotations

#: the only escapes a filter string knows: ``\\"``, ``\\\\``, ``\\f``, ``\\n``, ``\\r``, ``\\t``
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def quote(text: str) -> str:
    """``text`` as a filter string literal: Unicode as it is (``json.dumps``'s ``\\u`` escapes are not read).

    Raises ValueError for a control character the language cannot write.
    """
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch < " ":
            raise ValueError(f"{text!r}: a filter string cannot hold the control character {ch!r}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def name_is(name: str) -> str:
    """The filter selecting the entity called ``name``."""
    return f"name = {quote(name)}"


__all__ = ["name_is", "quote"]
