"""How big the long property and durability runs are: bounded by default, full on request.

``python -m pytest --long`` (or ``ZITI_LONG=1``, which subprocesses inherit) runs every property
and kill -9 test at its full size, as the scheduled long run does; the default run keeps each of
them, smaller, so the suite stays within two minutes on a busy two-core machine. Sizes are read
when a test module is imported, after ``tests/conftest.py`` has turned ``--long`` into the variable.
"""

from __future__ import annotations

import os

ENV = "ZITI_LONG"


def is_long() -> bool:
    return os.environ.get(ENV, "").strip().lower() not in ("", "0", "false", "no")


def size(full: int, bounded: int) -> int:
    """``full`` in the long run, ``bounded`` otherwise."""
    return full if is_long() else bounded


def examples(full: int, bounded: int | None = None) -> int:
    """Hypothesis examples: ``full`` in the long run, else ``bounded`` (a fifth of ``full``, at least 10)."""
    return size(full, bounded if bounded is not None else max(10, full // 5))
