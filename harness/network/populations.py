"""Populations of one entity kind as attribute classes, and role lists as bit masks over them.

Entities with the same attributes form a class: a role list selects whole
classes plus the entities it names, so evaluating a policy costs the number of
classes, not of entities, and sets of entities are Python ints used as bit masks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

DIAL, BIND = "Dial", "Bind"
TYPES = (DIAL, BIND)
ALL_ROLE = "#all"


def semantic_of(value: Any) -> str:
    text = str(value or "AnyOf").lower()
    return {"allof": "AllOf", "anyof": "AnyOf"}.get(text, text)


def type_of(value: Any) -> str:
    return BIND if str(value or DIAL).lower() == "bind" else DIAL


def bits(mask: int) -> list[int]:
    """Indexes of the set bits of ``mask``, ascending."""
    text, out = bin(mask)[:1:-1], []
    index = text.find("1")
    while index >= 0:
        out.append(index)
        index = text.find("1", index + 1)
    return out


def mask_of(indexes: Iterable[int], size: int) -> int:
    buffer = bytearray((size + 7) // 8)
    for index in indexes:
        buffer[index >> 3] |= 1 << (index & 7)
    return int.from_bytes(buffer, "little")


@dataclass(frozen=True)
class Match:
    """Who a role list selects: whole attribute classes plus entities named by ``@name``."""

    classes: frozenset[int]
    named: frozenset[int]


class Population:
    """The entities of one kind: names, attributes and attribute classes."""

    def __init__(self, items: list[dict]):
        self.names = [item["name"] for item in items]
        self.index = {name: i for i, name in enumerate(self.names)}
        self.attrs = [frozenset(item.get("roleAttributes") or ()) for item in items]
        groups: dict[frozenset, list[int]] = {}
        for i, attrs in enumerate(self.attrs):
            groups.setdefault(attrs, []).append(i)
        self.classes, self.members = list(groups), list(groups.values())
        self.class_of = [0] * len(self.names)
        for cls, members in enumerate(self.members):
            for i in members:
                self.class_of[i] = cls
        self.all_classes = frozenset(range(len(self.classes)))
        self._class_masks: list[int] | None = None
        self._masks: dict[Match, int] = {}

    def __len__(self) -> int:
        return len(self.names)

    def match(self, roles: Iterable[str] | None, semantic: str) -> Match:
        """The reference rule: ``#all``; ``@name``; ``#attr`` entries under AllOf/AnyOf; empty is nothing."""
        roles = list(roles or [])
        if ALL_ROLE in roles:
            return Match(self.all_classes, frozenset())
        named = frozenset(self.index[r[1:]] for r in roles if r.startswith("@") and r[1:] in self.index)
        wanted = frozenset(r[1:] for r in roles if r.startswith("#"))
        if not wanted or semantic not in ("AllOf", "AnyOf"):
            return Match(frozenset(), named)
        if semantic == "AllOf":
            return Match(frozenset(c for c, attrs in enumerate(self.classes) if wanted <= attrs), named)
        return Match(frozenset(c for c, attrs in enumerate(self.classes) if wanted & attrs), named)

    def contains(self, match: Match, index: int) -> bool:
        return self.class_of[index] in match.classes or index in match.named

    def class_mask(self, cls: int) -> int:
        if self._class_masks is None:
            self._class_masks = [mask_of(members, len(self.names)) for members in self.members]
        return self._class_masks[cls]

    def mask(self, match: Match) -> int:
        if match not in self._masks:
            mask = 0
            for cls in match.classes:
                mask |= self.class_mask(cls)
            for index in match.named:
                mask |= 1 << index
            self._masks[match] = mask
        return self._masks[match]

    def names_of(self, mask: int) -> list[str]:
        return [self.names[i] for i in bits(mask)]

    def position(self, name: str, kind: str) -> int:
        try:
            return self.index[name]
        except KeyError:
            raise KeyError(f"unknown {kind} {name!r}") from None


__all__ = ["ALL_ROLE", "BIND", "DIAL", "TYPES", "Match", "Population", "bits", "mask_of", "semantic_of", "type_of"]
