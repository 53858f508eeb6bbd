"""The network model's shared pieces: the locked engine, cross-entity lookups, service-update markers.

:class:`Network` answers which ``@id``s exist and what entities are named, and reads the
policy engine under the store lock; :class:`ServiceUpdateMarkers` bumps identities'
``lastChangeAt`` when their services' data changes; :func:`forget_in_policies` strips a
deleted entity from every policy. The registry (``controller/app.py``) builds them.
"""

from __future__ import annotations

from typing import Callable, Iterable

from controller.entities import ROLE_TARGETS
from controller.model.policies import PolicyManager
from controller.model.service import ServiceManager
from controller.model.service_config import ServiceConfigs
from controller.policy.engine import PolicyEngine
from controller.policy.kinds import IDENTITIES, POSTURE_CHECKS, SERVICE_POLICIES
from controller.policy.sync import ServiceUpdates
from controller.store.db import Store


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
    """Cross-entity lookups: which ``@id``s exist, entity names; the engine read under the store lock."""

    def __init__(self, store: Store, engine: PolicyEngine):
        self.store = store
        self.engine = LockedEngine(engine, store.lock)

    def exists(self, kind: str, entity_id: str) -> bool:
        target = ROLE_TARGETS[kind]
        return target.owns(self.store.get(target.table, entity_id) if isinstance(entity_id, str) else None)

    def missing_ids(self, kind: str):
        return lambda ids: [entity_id for entity_id in ids if not self.exists(kind, entity_id)]

    def name_of(self, kind: str):
        def name(entity_id: str) -> str | None:
            record = self.store.get(ROLE_TARGETS[kind].table, entity_id)
            return record.get("name") if record else None

        return name


def forget_in_policies(policies: Iterable[PolicyManager]) -> Callable[[str, str], None]:
    """``forget(kind, entity_id)``: remove ``@entity_id`` from every policy (the entity is being deleted)."""
    policies = tuple(policies)

    def forget(kind: str, entity_id: str) -> None:
        for manager in policies:
            manager.forget_entity(kind, entity_id)

    return forget


def role_cascade(forget: Callable[[str, str], None], kind: str, flag: str | None) -> Callable[[dict], None]:
    """The delete cascade of a role-list target: its ``@id`` leaves every policy (only records with ``flag``)."""

    def cascade(record: dict) -> None:
        if flag is None or record.get(flag):
            forget(kind, record["id"])

    return cascade


class ServiceUpdateMarkers:
    """A store listener: bumps ``lastChangeAt`` of identities whose services' data changed.

    Policy changes are the engine's (its listener); this one follows services, configs,
    identity config overrides and posture checks.
    """

    def __init__(
        self,
        store: Store,
        engine: PolicyEngine,
        *,
        services: ServiceManager,
        service_configs: ServiceConfigs,
        service_updates: ServiceUpdates,
    ):
        self.store, self.engine, self.services = store, engine, services
        self.service_configs, self.service_updates = service_configs, service_updates

    def on_changes(self, changes) -> None:
        engine, affected, services = self.engine, set(), set()
        for change in changes:
            record = change.new or change.old
            if change.table == "services":
                services.add(record["id"])
            elif change.table == "configs":
                services |= self.services.by_config.get(record["id"])
                affected |= self.service_configs.identities_using_config(record["id"])
            elif change.table == "identity_service_configs":
                affected.add(record["identity_id"])
            elif change.table == "posture_checks":
                if (change.old is None or change.new is None) and self.store.count("posture_checks") <= 1:
                    # The first check appearing (or the last going) turns every service's dummy
                    # posture queries into real ones (or back): every identity may see a change.
                    affected |= engine.entity_ids(IDENTITIES)
                for policy_id in engine.policies_of(POSTURE_CHECKS, record["id"], SERVICE_POLICIES):
                    affected |= engine.policy_members(policy_id, IDENTITIES, SERVICE_POLICIES)
        if services:
            affected |= engine.identities_for_services(services)
        if affected:
            self.service_updates.bump(affected)
