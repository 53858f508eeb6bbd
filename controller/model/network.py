"""Wires the network model into a controller: managers, delete cascades and service-update markers.

``install(ctl)`` is called once by ``Controller.__init__`` after the policy engine
exists; it returns the typed registry :class:`NetworkManagers`. :class:`Network`
holds the small cross-entity helpers the managers share.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from controller.model.config import ConfigManager
from controller.model.config_type import ConfigTypeManager
from controller.model.policies import (
    KIND_TABLES,
    EdgeRouterPolicyManager,
    ServiceEdgeRouterPolicyManager,
    ServicePolicyManager,
)
from controller.model.posture_check import PostureCheckManager, PostureCheckTypeManager
from controller.model.posture_data import PostureData
from controller.model.router import EdgeRouterManager, RouterManager, TransitRouterManager
from controller.model.service import ServiceManager
from controller.model.service_access import ServiceAccess
from controller.model.service_config import ServiceConfigs
from controller.model.session import SessionManager
from controller.model.terminator import TerminatorManager
from controller.policy.kinds import EDGE_ROUTERS, IDENTITIES, POSTURE_CHECKS, SERVICE_POLICIES, SERVICES


class LockedEngine:
    """The policy engine's queries, each run under the store lock.

    Writers update the engine from store listeners, under that lock; request threads
    read through this wrapper so no query iterates an index while it changes.
    """

    def __init__(self, engine, lock):
        self._engine, self._lock = engine, lock

    def __getattr__(self, name: str):
        query = getattr(self._engine, name)

        def locked(*args, **kwargs):
            with self._lock:
                return query(*args, **kwargs)

        return locked


class Network:
    """Cross-entity lookups: which ``@id``s exist, entity names, who a change affects."""

    def __init__(self, ctl):
        self.ctl = ctl
        self.engine = LockedEngine(ctl.engine, ctl.store.lock)

    def exists(self, kind: str, entity_id: str) -> bool:
        record = self.ctl.store.get(KIND_TABLES[kind], entity_id) if isinstance(entity_id, str) else None
        return record is not None and (kind != EDGE_ROUTERS or bool(record.get("is_edge")))

    def missing_ids(self, kind: str):
        return lambda ids: [entity_id for entity_id in ids if not self.exists(kind, entity_id)]

    def name_of(self, kind: str):
        def name(entity_id: str) -> str | None:
            record = self.ctl.store.get(KIND_TABLES[kind], entity_id)
            return record.get("name") if record else None

        return name

    def policies(self):
        ctl = self.ctl
        return (ctl.service_policies, ctl.edge_router_policies, ctl.service_edge_router_policies)

    def forget(self, kind: str, entity_id: str) -> None:
        """Remove ``@entity_id`` from every policy (the entity is being deleted)."""
        for manager in self.policies():
            manager.forget_entity(kind, entity_id)

    # -- service-update markers ---------------------------------------------------
    def on_changes(self, changes) -> None:
        """Bump ``lastChangeAt`` of identities whose services' data changed (policies are the engine's)."""
        engine, affected, services = self.ctl.engine, set(), set()
        for change in changes:
            record = change.new or change.old
            if change.table == "services":
                services.add(record["id"])
            elif change.table == "configs":
                services |= self.ctl.services.by_config.get(record["id"])
                affected |= self.ctl.service_configs.identities_using_config(record["id"])
            elif change.table == "identity_service_configs":
                affected.add(record["identity_id"])
            elif change.table == "posture_checks":
                if (change.old is None or change.new is None) and self.ctl.store.count("posture_checks") <= 1:
                    # The first check appearing (or the last going) turns every service's dummy
                    # posture queries into real ones (or back): every identity may see a change.
                    affected |= engine.entity_ids(IDENTITIES)
                for policy_id in engine.policies_of(POSTURE_CHECKS, record["id"], SERVICE_POLICIES):
                    affected |= engine.policy_members(policy_id, IDENTITIES, SERVICE_POLICIES)
        if services:
            affected |= engine.identities_for_services(services)
        if affected:
            self.ctl.service_updates.bump(affected)


@dataclass(frozen=True)
class NetworkManagers:
    """The network's managers, typed and built in one place (as OpenZiti's ``managers.go``).

    Each constructor reads only the store, clock, ids and policy engine, so the
    order below is free; the cascades and the store listener are registered after.
    """

    network: Network
    config_types: ConfigTypeManager
    configs: ConfigManager
    services: ServiceManager
    routers: RouterManager
    edge_routers: EdgeRouterManager
    transit_routers: TransitRouterManager
    terminators: TerminatorManager
    service_policies: ServicePolicyManager
    edge_router_policies: EdgeRouterPolicyManager
    service_edge_router_policies: ServiceEdgeRouterPolicyManager
    posture_checks: PostureCheckManager
    posture_check_types: PostureCheckTypeManager
    posture: PostureData
    service_configs: ServiceConfigs
    service_access: ServiceAccess
    sessions: SessionManager


#: the registry's field names (``Controller`` still answers ``ctl.<name>`` for them)
NETWORK_MANAGER_NAMES = frozenset(field.name for field in fields(NetworkManagers))


def install(ctl) -> NetworkManagers:
    """Build the network managers of ``ctl``; register their cascades and listeners; return them."""
    managers = NetworkManagers(
        network=Network(ctl),
        config_types=ConfigTypeManager(ctl),
        configs=ConfigManager(ctl),
        services=ServiceManager(ctl),
        routers=RouterManager(ctl),
        edge_routers=EdgeRouterManager(ctl),
        transit_routers=TransitRouterManager(ctl),
        terminators=TerminatorManager(ctl),
        service_policies=ServicePolicyManager(ctl),
        edge_router_policies=EdgeRouterPolicyManager(ctl),
        service_edge_router_policies=ServiceEdgeRouterPolicyManager(ctl),
        posture_checks=PostureCheckManager(ctl),
        posture_check_types=PostureCheckTypeManager(ctl),
        posture=PostureData(ctl),
        service_configs=ServiceConfigs(ctl),
        service_access=ServiceAccess(ctl),
        sessions=SessionManager(ctl),
    )
    ctl.store.add_listener(managers.network.on_changes)
    _register_cascades(ctl, managers)
    return managers


def _register_cascades(ctl, managers: NetworkManagers) -> None:
    register, network = ctl.cascades.register, managers.network
    register("identities", lambda r: network.forget(IDENTITIES, r["id"]))
    register("identities", managers.service_configs.delete_for_identity)
    register("identities", managers.posture.forget_identity)
    register("identities", lambda r: ctl.service_updates.forget(r["id"]))
    register("services", managers.sessions.delete_for_service)
    register("services", managers.terminators.delete_for_service)
    register("services", managers.service_configs.delete_for_service)
    register("services", lambda r: network.forget(SERVICES, r["id"]))
    register("routers", managers.routers.delete_dependents)
    register("posture_checks", lambda r: network.forget(POSTURE_CHECKS, r["id"]))
    register("configs", managers.services.drop_config)
    register("configs", managers.routers.drop_config)
    register("api_sessions", managers.sessions.delete_for_api_session)
    register("api_sessions", managers.posture.forget_session)
