"""Identities: who may log in, what roles they carry, what they may do."""

from __future__ import annotations

from typing import Callable

from controller import errors
from controller.clock import later, parse_rfc3339, rfc3339
from controller.entities import ENTITIES, IDENTITY_STORED_TYPE
from controller.errors import ControllerError, FieldError
from controller.model.auth_policy import AuthPolicyManager
from controller.model.base import Attr, Core, EntityManager, name_field, scalar, set_field
from controller.policy.roles import validate_role_attributes
from controller.store.change_context import ChangeContext
from controller.store.query import Field

IDENTITY_TYPES = ["User", "Device", "Service", "Router", "Default"]
STORED_TYPE = IDENTITY_STORED_TYPE
DEFAULT_AUTH_POLICY = "default"
#: the permission names the official documents list (an entity alone grants all its actions)
_PERMISSION_ENTITIES = (
    "auth-policy",
    "ca",
    "config",
    "config-type",
    "edge-router-policy",
    "enrollment",
    "external-jwt-signer",
    "identity",
    "posture-check",
    "router",
    "service",
    "service-edge-router-policy",
    "service-policy",
    "terminator",
)
PERMISSIONS = (
    "admin_readonly",
    "ops",
    "ops.read",
    "ops.update",
    "ops.delete",
    *(entity + action for entity in _PERMISSION_ENTITIES for action in ("", ".read", ".create", ".update", ".delete")),
)


def identity_record(identity_id: str, now: str, **fields) -> dict:
    """A stored identity with every attribute at its default, then ``fields`` (system identities, bulk fills)."""
    return {
        "id": identity_id,
        "created_at": now,
        "updated_at": now,
        "tags": {},
        "role_attributes": [],
        "auth_policy_id": None,
        "external_id": None,
        "app_data": {},
        "default_hosting_cost": 0,
        "default_hosting_precedence": "default",
        "service_hosting_costs": {},
        "service_hosting_precedences": {},
        "is_admin": False,
        "is_default_admin": False,
        "type_id": "Default",
        **fields,
    }


class IdentityManager(EntityManager):
    declaration = ENTITIES["identities"]
    attrs = (
        Attr("name"),
        Attr("isAdmin", default=False),
        Attr("roleAttributes", default=list),
        # NOTE(harden): stored and shown; admin gates still decide access (fine-grained grants not enforced).
        Attr("permissions", default=list),
        Attr("authPolicyId", default=None),
        Attr("externalId", default=None),
        Attr("appData", default=dict),
        Attr("defaultHostingCost", default=0),
        Attr("defaultHostingPrecedence", default="default"),
        Attr("serviceHostingCosts", default=dict),
        Attr("serviceHostingPrecedences", default=dict),
    )
    filter_fields = (
        name_field(),
        Field("type", "string", lambda r: r.get("type_id")),
        scalar("authPolicyId", "string"),
        scalar("externalId", "string"),
        scalar("isAdmin", "bool"),
        scalar("isDefaultAdmin", "bool"),
        Field("isSystem", "bool", lambda r: bool(r.get("is_system"))),
        set_field("roleAttributes", "role_attributes"),
    )
    link_names = (
        "authenticators",
        "edge-router-policies",
        "edge-routers",
        "enrollments",
        "failed-service-requests",
        "posture-data",
        "service-configs",
        "service-policies",
        "services",
    )

    def __init__(
        self,
        core: Core,
        *,
        auth_policies: AuthPolicyManager,
        open_enrollments: Callable[[str, dict], None],
        end_api_sessions: Callable[[str], None],
    ):
        """``open_enrollments`` and ``end_api_sessions`` reach managers built after this one."""
        super().__init__(core)
        self.auth_policies = auth_policies
        self.open_enrollments, self.end_api_sessions = open_enrollments, end_api_sessions

    # -- writes -------------------------------------------------------------
    def create(self, body: dict, *, context: ChangeContext | None = None) -> str:
        with self.store.lock, self.store.transaction(context):
            identity_id = super().create(body)
            enrollment = body.get("enrollment") or {}
            self.open_enrollments(identity_id, enrollment)
        return identity_id

    def create_system(self, record_fields: dict) -> str:
        """Create an identity the controller owns (default admin, router identities)."""
        record = identity_record(record_fields.get("id") or self.ids.short(), self._now(), **record_fields)
        with self.store.lock, self.store.transaction():
            self.check_name(record, None)
            self.store.insert(self.table, record["id"], record)
        return record["id"]

    def prepare(self, record: dict, old: dict | None, body: dict) -> None:
        wire_type = body.get("type")
        if wire_type is not None:
            if wire_type == "Router" and (old is None or old.get("type_id") != "Router"):
                raise FieldError("typeId", "identities of type Router are created by the controller", wire_type)
            record["type_id"] = STORED_TYPE[wire_type]
        if old is not None and old.get("type_id") == "Router":
            if record.get("type_id") != "Router":
                raise FieldError("typeId", "the type of a router identity can not be changed", body.get("type"))
            if record.get("name") != old.get("name"):
                raise FieldError("name", "the name of a router identity can not be changed", record.get("name"))
        record.setdefault("is_default_admin", False)
        if old is not None and old.get("is_default_admin"):
            record["is_admin"] = True
        validate_role_attributes(record.get("role_attributes") or [])
        if record.get("auth_policy_id"):
            self.require_ref(record, "auth_policy_id")
        if record.get("external_id") == "":
            record["external_id"] = None
        record["default_hosting_precedence"] = record.get("default_hosting_precedence") or "default"

    def before_delete(self, record: dict) -> None:
        if record.get("is_default_admin"):
            raise ControllerError(errors.ENTITY_CAN_NOT_BE_DELETED, "the default admin identity can not be deleted")
        if record.get("type_id") == "Router" and self.store.get("routers", record["id"]) is not None:
            raise ControllerError(errors.ENTITY_CAN_NOT_BE_DELETED, "a router identity is deleted with its router")

    # -- disable / enable -----------------------------------------------------
    def disable(self, identity_id: str, duration_minutes: int, *, context: ChangeContext | None = None) -> None:
        now = self.clock.now()
        until = rfc3339(later(now, minutes=duration_minutes)) if duration_minutes > 0 else None
        with self.store.lock, self.store.transaction(context):
            self.touch(identity_id, disabled_at=rfc3339(now), disabled_until=until)
            self.end_api_sessions(identity_id)

    def enable(self, identity_id: str, *, context: ChangeContext | None = None) -> None:
        self.get(identity_id)
        self.touch(identity_id, context=context, disabled_at=None, disabled_until=None)

    def is_disabled(self, record: dict) -> bool:
        """Disabled = ``disabledAt`` set and ``disabledUntil`` null or in the future."""
        if not record.get("disabled_at"):
            return False
        until = record.get("disabled_until")
        return until is None or parse_rfc3339(until) > self.clock.now()

    # -- SDK and environment info ----------------------------------------------
    def save_info(
        self, identity_id: str, *, sdk_info=None, env_info=None, context: ChangeContext | None = None
    ) -> bool:
        """Store a login's ``sdkInfo``/``envInfo`` (``None``: not sent) on the identity when they differ.

        As the real controller (it compares each with what is stored and patches the
        identity only when one changed), a login that sends what is stored writes
        nothing: no commit, no change event, ``updatedAt`` stays. True when written.
        """
        with self.store.lock:
            stored = self.find(identity_id)
            if stored is None:  # deleted meanwhile: nothing to keep the info on
                return False
            changes = {
                key: value
                for key, value in (("sdk_info", sdk_info), ("env_info", env_info))
                if value is not None and stored.get(key) != value
            }
            if not changes:
                return False
            self.touch(identity_id, context=context, **changes)
        return True

    def auth_policy_of(self, record: dict) -> dict:
        return self.auth_policies.find(record.get("auth_policy_id") or DEFAULT_AUTH_POLICY) or {}
