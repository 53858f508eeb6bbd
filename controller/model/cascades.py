"""Delete cascades: what else goes when an entity goes.

Modules register a function per table; ``EntityManager.delete`` runs them
inside the same store transaction, so a cascade is all-or-nothing.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable


class Cascades:
    def __init__(self):
        self._by_table: dict[str, list[Callable[[dict], None]]] = defaultdict(list)

    def register(self, table: str, fn: Callable[[dict], None]) -> None:
        self._by_table[table].append(fn)

    def run(self, table: str, record: dict) -> None:
        for fn in self._by_table.get(table, ()):
            fn(record)
