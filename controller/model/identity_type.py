"""Identity types: ``Default`` and ``Router`` (ids equal names), read-only."""

from __future__ import annotations

from controller.entities import ENTITIES
from controller.model.base import EntityManager, name_field

BUILT_IN = ("Default", "Router")


class IdentityTypeManager(EntityManager):
    declaration = ENTITIES["identity_types"]
    filter_fields = (name_field(),)

    def bootstrap(self) -> None:
        now = self._now()
        with self.store.lock, self.store.transaction():
            for name in BUILT_IN:
                if self.find(name) is None:
                    self.store.insert(
                        self.table, name, {"id": name, "name": name, "created_at": now, "updated_at": now, "tags": {}}
                    )
