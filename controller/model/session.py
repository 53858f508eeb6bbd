"""Sessions: an API session's permission to dial or bind one service, over some edge routers.

``create`` runs the real checks in the real order (model-semantics section 4) and
returns the existing session for a repeated (API session, service, type). Sessions
go with their service and API session (cascades) and when their identity loses the
permission (``on_policy_change``, the engine's listener, collects the identities and
schedules ``enforce_dirty`` on the store, which runs it after the commit's listeners).
"""

from __future__ import annotations

from controller import errors
from controller.entities import ENTITIES
from controller.model.api_session import ApiSessionManager
from controller.model.base import Core, EntityManager
from controller.model.identity import IdentityManager
from controller.model.network import Network
from controller.model.posture_data import PostureData
from controller.model.router import EdgeRouterManager
from controller.model.service import ServiceManager
from controller.model.service_access import ServiceAccess
from controller.store.change_context import ChangeContext
from controller.store.indexes import MultiIndex, UniqueIndex
from controller.store.query import Field

TYPES = ("Dial", "Bind")
MAX_ROUTERS = 25


class SessionManager(EntityManager):
    declaration = ENTITIES["sessions"]
    unique_names = False
    filter_fields = (
        Field("token", "string", lambda r: r.get("token")),
        Field("apiSession", "string", lambda r: r.get("api_session_id")),
        Field("service", "string", lambda r: r.get("service_id")),
        Field("identity", "string", lambda r: r.get("identity_id")),
        Field("type", "string", lambda r: r.get("type")),
        Field("isSystem", "bool", lambda r: False),
    )

    def __init__(
        self,
        core: Core,
        *,
        network: Network,
        identities: IdentityManager,
        api_sessions: ApiSessionManager,
        services: ServiceManager,
        edge_routers: EdgeRouterManager,
        service_access: ServiceAccess,
        posture: PostureData,
    ):
        super().__init__(core)
        self.network, self.identities, self.api_sessions = network, identities, api_sessions
        self.services, self.edge_routers = services, edge_routers
        self.service_access, self.posture = service_access, posture
        self.by_api_session = MultiIndex(self.store, self.table, lambda r: r.get("api_session_id"))
        self.by_identity = MultiIndex(self.store, self.table, lambda r: r.get("identity_id"))
        self.by_purpose = UniqueIndex(
            self.store, self.table, lambda r: (r.get("api_session_id"), r.get("service_id"), r.get("type"))
        )
        #: identities whose permissions changed since the last enforcement (``on_policy_change``)
        self._dirty: set[str] = set()

    # -- creation -------------------------------------------------------------------
    def create_for(
        self, identity: dict, api_session: dict, body: dict, *, context: ChangeContext | None = None
    ) -> dict:
        """``createSession``: type, visibility, permission, posture, routers; then reuse or insert."""
        engine = self.network.engine
        ptype = body.get("type") or "Dial"
        if ptype not in TYPES:
            raise errors.FieldError("type", "type in body should be one of [Dial Bind]", ptype)
        service_id = body.get("serviceId")
        permissions = engine.permissions(identity["id"], service_id) if isinstance(service_id, str) else []
        if not permissions or self.services.find(service_id) is None:
            raise errors.NotFound("service", service_id)
        if ptype not in permissions:
            raise errors.FieldError("ServiceId", "service not found", service_id)
        passing = self.check_posture(identity, api_session, service_id, ptype)
        if not engine.usable_edge_routers(identity["id"], service_id):
            raise errors.BadRequest(errors.NO_EDGE_ROUTERS_AVAILABLE, "No edge routers are available for this service")
        with self.store.lock, self.store.transaction(context):
            existing = self.find(self.by_purpose.get((api_session["id"], service_id, ptype)) or "")
            if existing is not None:
                return existing
            session_id, now = self.ids.cuid(), self._now()
            record = {
                "id": session_id,
                "token": session_id,
                "created_at": now,
                "updated_at": now,
                "tags": body.get("tags") or {},
                "api_session_id": api_session["id"],
                "identity_id": identity["id"],
                "service_id": service_id,
                "type": ptype,
                "service_policies": passing,
            }
            self.store.insert(self.table, session_id, record)
        return record

    def check_posture(self, identity: dict, api_session: dict, service_id: str, ptype: str) -> list[str]:
        """Ids of the policies of ``ptype`` whose checks all pass; 409 ``INVALID_POSTURE`` if none does."""
        results = self.service_access.policy_results(identity["id"], api_session, service_id, ptype)
        passing = [policy["id"] for policy, checks in results if all(r.passing for _, r in checks)]
        if passing or not results:
            return passing
        failures = {
            policy["id"]: [
                {"postureCheckId": c["id"], "postureCheckName": c.get("name"), "postureCheckType": c["type_id"]}
                for c, r in checks
                if not r.passing
            ]
            for policy, checks in results
        }
        service = self.services.find(service_id) or {}
        self.posture.record_failure(
            identity["id"],
            {
                "apiSessionId": api_session["id"],
                "serviceId": service_id,
                "serviceName": service.get("name"),
                "sessionType": ptype,
                "when": self._now(),
                "policyFailures": [
                    {
                        "policyId": pid,
                        "policyName": (self.store.get("service_policies", pid) or {}).get("name"),
                        "checks": checks,
                    }
                    for pid, checks in sorted(failures.items())
                ],
            },
        )
        ids = " ".join(sorted(failures))
        raise errors.Conflict(
            errors.INVALID_POSTURE,
            "The supplied posture did not meet the criteria required for this operation",
            {"message": f"failed to pass posture checks for service policies: [{ids}]", "data": failures},
        )

    # -- automatic deletion ---------------------------------------------------------------
    def delete_for_api_session(self, api_session: dict) -> None:
        for session_id in list(self.by_api_session.get(api_session["id"])):
            self.store.delete(self.table, session_id)

    def on_policy_change(self, identity_ids) -> None:
        """The engine's listener (registered by the registry): identities whose permissions changed.

        Runs while the store notifies its listeners, so it only schedules the cascade:
        the store runs ``enforce_dirty`` after the commit, as a transaction of its own.
        """
        self._dirty.update(identity_ids)
        self.store.after_commit(self.enforce_dirty)

    def enforce_dirty(self) -> None:
        """Delete the sessions the changed identities no longer hold permission for."""
        dirty = self._dirty & set(self.by_identity.keys())
        self._dirty.clear()
        if dirty:
            self.enforce_access(dirty)

    def enforce_access(self, identity_ids) -> None:
        """Delete sessions whose identity no longer holds their permission (admins keep theirs)."""
        engine, doomed = self.network.engine, []
        for identity_id in identity_ids:
            identity = self.identities.find(identity_id)
            if identity is None or identity.get("is_admin"):
                continue
            for session_id in self.by_identity.get(identity_id):
                record = self.find(session_id)
                if record and record["type"] not in engine.permissions(identity_id, record["service_id"]):
                    doomed.append(session_id)
        self._delete_all(doomed)

    def enforce_posture(self, identity_id: str, *, context: ChangeContext | None = None) -> None:
        """Delete the identity's sessions that no passing policy allows any more."""
        doomed = []
        for session_id in self.by_identity.get(identity_id):
            record = self.find(session_id)
            api_session = self.api_sessions.find(record["api_session_id"]) if record else None
            if record is None or api_session is None:
                continue
            results = self.service_access.policy_results(identity_id, api_session, record["service_id"], record["type"])
            if results and not any(all(r.passing for _, r in checks) for _, checks in results):
                doomed.append(session_id)
        self._delete_all(doomed, context)

    def _delete_all(self, session_ids: list[str], context: ChangeContext | None = None) -> None:
        if session_ids:
            with self.store.lock, self.store.transaction(context):
                for session_id in session_ids:
                    self.store.delete(self.table, session_id)

    # -- reads ----------------------------------------------------------------------
    def visible_to(self, identity: dict) -> list[dict]:
        """Client listing: an admin sees every session, others those of their API sessions."""
        if identity.get("is_admin"):
            return self.store.all(self.table)
        return [r for r in map(self.find, self.by_identity.get(identity["id"])) if r]

    def get_own(self, identity: dict, session_id: str) -> dict:
        record = self.find(session_id)
        if record is None or record["identity_id"] != identity["id"]:
            raise errors.NotFound(self.label, session_id)
        return record

    def usable_routers(self, identity_id: str, service_id: str) -> list[dict]:
        """The edge routers shared by the identity's and the service's policies (at most ``MAX_ROUTERS``)."""
        ids = sorted(self.network.engine.usable_edge_routers(identity_id, service_id))[:MAX_ROUTERS]
        return [r for r in map(self.edge_routers.find, ids) if r]
