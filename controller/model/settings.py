"""Controller settings: the ``global`` record plus per-controller overrides.

An override's id is the controller id it applies to. The effective settings
of a controller are its override's values where set, else the global ones.
"""

from __future__ import annotations

from controller import errors
from controller.entities import ENTITIES
from controller.errors import Conflict, FieldError, NotFound
from controller.model.base import Attr, Core, EntityManager
from controller.store.change_context import ChangeContext

GLOBAL = "global"
OIDC_KEYS = (("postLogoutUris", "post_logout_uris"), ("redirectUris", "redirect_uris"))


def oidc_record(wire: dict | None, base: dict | None = None) -> dict:
    """Wire ``oidc`` -> record; keys absent or null keep ``base``'s values (None when unset)."""
    out = dict(base or {key: None for _, key in OIDC_KEYS})
    for wire_key, key in OIDC_KEYS:
        value = (wire or {}).get(wire_key)
        if value is not None:
            out[key] = list(value)
    return out


class ControllerSettingManager(EntityManager):
    declaration = ENTITIES["controller_settings"]
    unique_names = False
    attrs = (Attr("oidc", public=False),)

    def __init__(self, core: Core, *, instance_id: str):
        super().__init__(core)
        self.instance_id = instance_id

    def bootstrap(self) -> None:
        with self.store.lock:
            if self.find(GLOBAL) is None:
                now = self._now()
                self.store.insert(
                    self.table,
                    GLOBAL,
                    {
                        "id": GLOBAL,
                        "created_at": now,
                        "updated_at": now,
                        "tags": {},
                        "oidc": {"post_logout_uris": [], "redirect_uris": []},
                    },
                )

    def new_id(self, body: dict) -> str:
        return body["controllerId"]

    def create(self, body: dict, *, context: ChangeContext | None = None) -> str:
        return super().create({**body, "oidc": oidc_record(body.get("oidc"))}, context=context)

    def update(self, entity_id: str, body: dict, *, context: ChangeContext | None = None) -> None:
        super().update(entity_id, {**body, "oidc": oidc_record(body.get("oidc"))}, context=context)

    def patch(self, entity_id: str, body: dict, *, context: ChangeContext | None = None) -> None:
        with self.store.lock:
            old = self.get(entity_id)
            changes = dict(body)
            if body.get("oidc") is not None:
                changes["oidc"] = oidc_record(body["oidc"], old.get("oidc"))
            super().patch(entity_id, changes, context=context)

    def prepare(self, record: dict, old: dict | None, body: dict) -> None:
        if old is None and self.find(record["id"]) is not None:
            raise FieldError("controllerId", f"controller settings for '{record['id']}' already exist", record["id"])
        if record["id"] == GLOBAL:
            # NOTE: global values are never "unset": a null list there means an empty one.
            record["oidc"] = {key: value or [] for key, value in (record.get("oidc") or {}).items()}

    def before_delete(self, record: dict) -> None:
        if record["id"] == GLOBAL:
            raise Conflict(
                errors.CAN_NOT_DELETE_REFERENCED_ENTITY,
                "the global controller settings can not be deleted",
                {"field": "id", "reason": "referenced", "value": GLOBAL},
            )

    def effective(self, controller_id: str) -> tuple[dict | None, dict, dict]:
        """``(override or None, the global record, the merged oidc)`` of a controller with an override,
        the running one or ``global`` (404 for any other)."""
        instance = self.find(controller_id)
        if instance is None and controller_id != self.instance_id:
            raise NotFound(self.label, controller_id)
        base = self.get(GLOBAL)
        merged = dict(base.get("oidc") or {})
        for key, value in ((instance or {}).get("oidc") or {}).items():
            if value is not None:
                merged[key] = value
        return instance, base, merged
