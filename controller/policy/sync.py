"""Keeps the policy engine in step with the store, and the service-update markers.

The engine is never persisted: :class:`PolicySync` replays every record on
start, then mirrors each committed change (it is a store listener, so it runs
under the store lock right after the commit). Record shapes (snake_case):

* ``identities``, ``services``, ``posture_checks``: ``role_attributes``
* ``routers`` with ``is_edge`` true are the edge routers: ``role_attributes``
* ``service_policies``: ``type``, ``semantic``, ``identity_roles``, ``service_roles``, ``posture_check_roles``
* ``edge_router_policies``: ``semantic``, ``identity_roles``, ``edge_router_roles``
* ``service_edge_router_policies``: ``semantic``, ``service_roles``, ``edge_router_roles``
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from controller.clock import rfc3339
from controller.gc_pause import gc_paused
from controller.policy.engine import PolicyEngine
from controller.policy.kinds import EDGE_ROUTER_POLICIES, POLICY_KINDS, SERVICE_EDGE_ROUTER_POLICIES, SERVICE_POLICIES
from controller.policy.verify import problems as verify_engine

ENTITY_TABLES = {
    "identities": ("upsert_identity", "remove_identity"),
    "services": ("upsert_service", "remove_service"),
    "posture_checks": ("upsert_posture_check", "remove_posture_check"),
    "routers": ("upsert_edge_router", "remove_edge_router"),
}
POLICY_TABLE_KINDS = {
    "service_policies": SERVICE_POLICIES,
    "edge_router_policies": EDGE_ROUTER_POLICIES,
    "service_edge_router_policies": SERVICE_EDGE_ROUTER_POLICIES,
}
POLICY_TABLES = tuple(POLICY_TABLE_KINDS)
BULK_BATCH = 1000  # smallest commit worth a bulk rebuild of the engine


class ServiceUpdates:
    """Per-identity ``lastChangeAt``: moves whenever the identity's services may have changed."""

    def __init__(self, clock):
        self.clock = clock
        self._started = self._stamp = clock.now()
        self._last: dict[str, datetime] = {}

    def bump(self, identity_ids) -> None:
        # NOTE(lead): SDKs compare lastChangeAt as a string, so every bump must move it, even
        # within one millisecond or under a frozen test clock: stamps strictly increase.
        self._stamp = max(self.clock.now(), self._stamp + timedelta(milliseconds=1))
        # NOTE(network): one C-level update; a broad policy change bumps ~100,000 identities.
        self._last.update(dict.fromkeys(identity_ids, self._stamp))

    def last_change(self, identity_id: str) -> str:
        return rfc3339(self._last.get(identity_id, self._started))

    def forget(self, identity_id: str) -> None:
        self._last.pop(identity_id, None)


class PolicySync:
    """Feeds store changes into a :class:`PolicyEngine`."""

    def __init__(self, store, engine: PolicyEngine | None = None):
        self.store = store
        self.engine = engine or PolicyEngine()
        with store.lock:
            self._replay()

    def rebuild(self) -> None:
        """Recompute the engine from the store (the data-integrity fix for derived links)."""
        with self.store.lock:
            self.engine.reset()
            self._replay()

    def differences(self, limit: int = 20) -> list[str]:
        """Where the engine's policy-derived links differ from ones recomputed from the store."""
        with self.store.lock:
            fresh = PolicySync.__new__(PolicySync)
            fresh.store, fresh.engine = self.store, PolicyEngine()
            fresh._replay()
            found = []
            for table, pkind in POLICY_TABLE_KINDS.items():
                ids = self.engine.policy_ids(pkind) | fresh.engine.policy_ids(pkind)
                for policy_id in sorted(ids):
                    for kind in POLICY_KINDS[pkind]:
                        ours = self.engine.policy_members(policy_id, kind, pkind)
                        if ours != fresh.engine.policy_members(policy_id, kind, pkind):
                            found.append(f"{table} {policy_id}: derived {kind} differ from the store's")
                            break
                    if len(found) >= limit:
                        return found
            return found + verify_engine(self.engine)[: max(0, limit - len(found))]

    def _replay(self, also_affected: Iterable[str] = ()) -> None:
        """Load the whole store into the (empty) engine in one bulk build."""
        with gc_paused(), self.engine.bulk(also_affected):
            self._replay_records()

    def _replay_records(self) -> None:
        for table in ENTITY_TABLES:
            for record in self.store.values(table):
                self._apply(table, None, record)
        for table in POLICY_TABLES:
            for record in self.store.values(table):
                self._apply(table, None, record)

    def on_changes(self, changes) -> None:
        relevant = [c for c in changes if c.table in ENTITY_TABLES or c.table in POLICY_TABLES]
        if len(relevant) >= BULK_BATCH and 2 * len(relevant) >= self.engine.size():
            # A commit about as large as the network (an import): one bulk build beats per-record updates.
            gone = {c.old["id"] for c in relevant if c.table == "identities" and c.new is None and c.old}
            self.engine.reset()
            self._replay(gone)
            return
        for change in relevant:
            self._apply(change.table, change.old, change.new)

    def _apply(self, table: str, old: dict | None, new: dict | None) -> None:
        engine = self.engine
        if table in ENTITY_TABLES:
            upsert, remove = (getattr(engine, name) for name in ENTITY_TABLES[table])
            if table == "routers" and new is not None and not new.get("is_edge"):
                new = None  # transit routers take no part in policies
            if new is None:
                if old is not None and (table != "routers" or old.get("is_edge")):
                    remove(old["id"])
            elif old is None or old.get("role_attributes") != new.get("role_attributes") or table == "routers":
                upsert(new["id"], new.get("role_attributes") or [])
            return
        if new is None:
            getattr(engine, "remove_" + table[: -len("ies")] + "y")(old["id"])
            return
        if old is not None and _same_policy(old, new):
            return
        if table == "service_policies":
            engine.upsert_service_policy(
                new["id"],
                new["type"],
                new["semantic"],
                new.get("identity_roles") or [],
                new.get("service_roles") or [],
                new.get("posture_check_roles") or [],
            )
        elif table == "edge_router_policies":
            engine.upsert_edge_router_policy(
                new["id"], new["semantic"], new.get("identity_roles") or [], new.get("edge_router_roles") or []
            )
        else:
            engine.upsert_service_edge_router_policy(
                new["id"], new["semantic"], new.get("service_roles") or [], new.get("edge_router_roles") or []
            )


_POLICY_KEYS = ("type", "semantic", "identity_roles", "service_roles", "edge_router_roles", "posture_check_roles")


def _same_policy(old: dict, new: dict) -> bool:
    return all(old.get(key) == new.get(key) for key in _POLICY_KEYS)
