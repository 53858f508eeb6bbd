"""What one identity sees of a service: permissions, selected configs, posture queries.

Used by the client ``/services`` listings, the management service views for a
caller or ``asIdentity``, and session creation. Every lookup is an engine query
or an index read, so rendering a page costs the page, not the network.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.model.config import ConfigManager
from controller.model.config_type import ConfigTypeManager
from controller.model.network import Network
from controller.model.posture_data import PostureData
from controller.model.service import ServiceManager
from controller.model.service_config import ServiceConfigs
from controller.store.db import Store


@dataclass(frozen=True)
class ServiceSight:
    """What one identity sees of one service: computed here, rendered by the API's ``service_view``."""

    #: the viewer (None: a view without one: no permissions, no posture)
    identity_id: str | None
    #: "Dial"/"Bind" the viewer holds
    permissions: list[str]
    #: config type name -> config data for the requested types (identity overrides win)
    config: dict
    #: per linking service policy its checks' results (``policy_results``); None when no posture check exists
    policy_results: list | None


class ServiceAccess:
    def __init__(
        self,
        store: Store,
        *,
        network: Network,
        services: ServiceManager,
        config_types: ConfigTypeManager,
        configs: ConfigManager,
        service_configs: ServiceConfigs,
        posture: PostureData,
    ):
        self.store, self.network, self.services = store, network, services
        # NOTE: ``config_types`` is this class's own method; the manager is ``types``
        self.types, self.configs, self.service_configs, self.posture = config_types, configs, service_configs, posture

    # -- access ---------------------------------------------------------------------
    def visible_ids(self, identity_id: str) -> set[str]:
        """Services the identity may dial or bind."""
        return self.network.engine.services_for_identity(identity_id)

    def permissions(self, identity_id: str, service_id: str) -> list[str]:
        return self.network.engine.permissions(identity_id, service_id)

    def sight(self, service: dict, identity_id: str | None, session: dict | None, type_ids: list[str]) -> ServiceSight:
        """What ``identity_id`` sees of ``service``: permissions, selected configs, posture results."""
        permissions = self.permissions(identity_id, service["id"]) if identity_id else []
        config = self.config_map(service, identity_id, type_ids)
        results = None
        if identity_id and self.posture_checks_exist():
            results = self.policy_results(identity_id, session, service["id"])
        return ServiceSight(identity_id, permissions, config, results)

    # -- configs --------------------------------------------------------------------
    def config_types(self, requested: list[str], session: dict | None) -> list[str]:
        """Requested type names/ids resolved to ids; none requested falls back to the login's list."""
        if requested:
            return self.types.resolve(requested)
        return list((session or {}).get("config_types") or [])

    def config_map(self, service: dict, identity_id: str | None, type_ids: list[str]) -> dict:
        """``config``: type name -> data for the requested types; identity overrides win."""
        if not type_ids:
            return {}
        wanted = None if "all" in type_ids else set(type_ids)
        chosen: dict[str, str] = {}
        for config_id in service.get("configs") or []:
            config = self.configs.find(config_id)
            if config and (wanted is None or config["config_type_id"] in wanted):
                chosen[config["config_type_id"]] = config_id
        if identity_id:
            for override in self.service_configs.for_pair(identity_id, service["id"]):
                if wanted is None or override["config_type_id"] in wanted:
                    chosen[override["config_type_id"]] = override["config_id"]
        out = {}
        for type_id, config_id in chosen.items():
            config, config_type = self.configs.find(config_id), self.types.find(type_id)
            if config and config_type:
                out[config_type["name"]] = config.get("data") or {}
        return out

    # -- posture --------------------------------------------------------------------
    def posture_checks_exist(self) -> bool:
        return self.store.count("posture_checks") > 0

    def policy_results(self, identity_id: str, session: dict | None, service_id: str, ptype: str | None = None):
        """[(policy record, [(check record, Result)])] for the service policies linking identity and service."""
        engine, out = self.network.engine, []
        for policy_id in engine.service_policies_linking(identity_id, service_id, ptype):
            policy = self.store.get("service_policies", policy_id)
            if policy is None:
                continue
            checks = []
            for check_id in sorted(engine.posture_checks_of_policy(policy_id)):
                check = self.store.get("posture_checks", check_id)
                if check is not None:
                    checks.append((check, self.posture.evaluate(check, identity_id, session)))
            out.append((policy, checks))
        return out

    def mfa_reprompted(self, identity_id: str, session: dict, flags: list[str]) -> list[dict]:
        """Services with MFA checks that re-prompt on the reported wake/unlock."""
        out, seen = [], set()
        for service_id in sorted(self.visible_ids(identity_id)):
            for _policy, checks in self.policy_results(identity_id, session, service_id):
                for check, result in checks:
                    if check["type_id"] == "MFA" and any(check.get(f) for f in flags) and service_id not in seen:
                        seen.add(service_id)
                        service = self.services.find(service_id) or {}
                        out.append(
                            {
                                "id": service_id,
                                "name": service.get("name"),
                                "postureQueryType": "MFA",
                                "timeout": result.timeout,
                                "timeoutRemaining": result.remaining,
                            }
                        )
        return out
