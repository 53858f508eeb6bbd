"""``importEntities``: an ordered list of create operations, each checked against its own body schema."""

from __future__ import annotations

from controller.model import schema as s

ITEM = s.obj(
    {"op": s.string(min_length=1), "ref": s.string(min_length=1, nullable=True), "body": {"type": "object"}},
    required=("op", "body"),
)
IMPORT = s.obj({"items": {"type": "array", "items": ITEM}}, required=("items",))
