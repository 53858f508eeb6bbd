"""Identity service-config overrides: per (identity, service, config type), the config to use.

Stored as link records in ``identity_service_configs`` keyed by the triple, so
associating a config of a type already overridden replaces it.
"""

from __future__ import annotations

from controller import errors
from controller.clock import rfc3339
from controller.model.base import Core
from controller.model.config import ConfigManager
from controller.model.identity import IdentityManager
from controller.model.service import ServiceManager
from controller.store.change_context import ChangeContext
from controller.store.indexes import MultiIndex

TABLE = "identity_service_configs"


class ServiceConfigs:
    def __init__(self, core: Core, *, identities: IdentityManager, services: ServiceManager, configs: ConfigManager):
        self.store, self.clock = core.store, core.clock
        self.identities, self.services, self.configs = identities, services, configs
        self.by_identity = MultiIndex(self.store, TABLE, lambda r: r.get("identity_id"))
        self.by_service = MultiIndex(self.store, TABLE, lambda r: r.get("service_id"))
        self.by_config = MultiIndex(self.store, TABLE, lambda r: r.get("config_id"))

    # -- reads ----------------------------------------------------------------------
    def of_identity(self, identity_id: str) -> list[dict]:
        records = [self.store.get(TABLE, key) for key in self.by_identity.get(identity_id)]
        return sorted((r for r in records if r), key=lambda r: (r["service_id"], r["config_type_id"]))

    def for_pair(self, identity_id: str, service_id: str) -> list[dict]:
        keys = self.by_identity.get(identity_id)
        if not keys:
            return []
        keys = keys & self.by_service.get(service_id)
        return [r for r in (self.store.get(TABLE, key) for key in sorted(keys)) if r]

    def identities_using_config(self, config_id: str) -> set[str]:
        return {r["identity_id"] for r in (self.store.get(TABLE, key) for key in self.by_config.get(config_id)) if r}

    # -- writes ---------------------------------------------------------------------
    def associate(self, identity_id: str, pairs: list[dict], *, context: ChangeContext | None = None) -> None:
        with self.store.lock, self.store.transaction(context):
            self.identities.get(identity_id)
            for pair in pairs:
                self.services.get(pair["serviceId"])
                config = self.configs.get(pair["configId"])
                config_type = self.configs.type_of(config) or {}
                if (config_type.get("target") or "service") != "service":
                    raise errors.FieldError("configId", "the config's type does not target services", pair["configId"])
                now = rfc3339(self.clock.now())
                key = _key(identity_id, pair["serviceId"], config["config_type_id"])
                old = self.store.get(TABLE, key)
                self.store.put(
                    TABLE,
                    key,
                    {
                        "id": key,
                        "identity_id": identity_id,
                        "service_id": pair["serviceId"],
                        "config_id": config["id"],
                        "config_type_id": config["config_type_id"],
                        "created_at": old["created_at"] if old else now,
                        "updated_at": now,
                        "tags": {},
                    },
                )

    def disassociate(self, identity_id: str, pairs: list[dict], *, context: ChangeContext | None = None) -> None:
        """Remove the override of each pair's service and its config's type (missing ones are ignored)."""
        with self.store.lock, self.store.transaction(context):
            self.identities.get(identity_id)
            for pair in pairs:
                config = self.configs.find(pair["configId"])
                if config is not None:
                    self.store.delete(TABLE, _key(identity_id, pair["serviceId"], config["config_type_id"]))


def _key(identity_id: str, service_id: str, config_type_id: str) -> str:
    return f"{identity_id}/{service_id}/{config_type_id}"
