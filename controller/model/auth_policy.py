"""Authentication policies: which primary methods and second factors apply."""

from __future__ import annotations

import copy
from typing import Callable

from controller import errors
from controller.auth.password import UPDB
from controller.entities import ENTITIES
from controller.errors import ControllerError, NotFound, ReferenceExists
from controller.model.base import Attr, Core, EntityManager, name_field, snake
from controller.store.change_context import ChangeContext
from controller.store.indexes import MultiIndex

DEFAULT_POLICY = {
    "primary": {
        "cert": {"allowed": True, "allow_expired_certs": True},
        "ext_jwt": {"allowed": True, "allowed_signers": []},
        UPDB: {
            "allowed": True,
            "lockout_duration_minutes": 0,
            "max_attempts": 0,
            "min_password_length": 5,
            "require_mixed_case": False,
            "require_number_char": False,
            "require_special_char": False,
        },
    },
    "secondary": {"require_ext_jwt_signer": None, "require_totp": False},
}


def password_rules(policy: dict) -> dict:
    """The password section of a policy record (``primary.updb``)."""
    return policy.get("primary", {}).get(UPDB, {})


def to_record(value):
    """Wire (camelCase) policy object -> record (snake_case), deeply."""
    if isinstance(value, dict):
        return {snake(k): to_record(v) for k, v in value.items()}
    return copy.deepcopy(value)


def to_wire(value):
    if isinstance(value, dict):
        return {_camel(k): to_wire(v) for k, v in value.items()}
    return copy.deepcopy(value)


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _merge(base: dict, changes: dict) -> dict:
    """Deep PATCH merge: null means absent."""
    out = dict(base)
    for key, value in changes.items():
        if value is None:
            continue
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key not in ("allowed_signers",):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


class AuthPolicyManager(EntityManager):
    declaration = ENTITIES["auth_policies"]
    attrs = (Attr("name"), Attr("primary", public=False), Attr("secondary", public=False))
    filter_fields = (name_field(),)

    def __init__(self, core: Core, *, find_signer: Callable[[str], dict | None]):
        """``find_signer`` reaches the external JWT signers, built after this manager (they need identities)."""
        super().__init__(core)
        self.find_signer = find_signer
        self.users = MultiIndex(self.store, "identities", lambda r: r.get("auth_policy_id"))

    def bootstrap(self) -> None:
        if self.find("default") is None:
            now = self._now()
            record = {
                "id": "default",
                "name": "Default",
                "is_system": True,
                "created_at": now,
                "updated_at": now,
                "tags": {},
                **copy.deepcopy(DEFAULT_POLICY),
            }
            self.store.insert(self.table, "default", record)

    def create(self, body: dict, *, context: ChangeContext | None = None) -> str:
        return super().create(self._normalise(body), context=context)

    def update(self, entity_id: str, body: dict, *, context: ChangeContext | None = None) -> None:
        super().update(entity_id, self._normalise(body), context=context)

    def patch(self, entity_id: str, body: dict, *, context: ChangeContext | None = None) -> None:
        with self.store.lock:
            old = self.get(entity_id)
            merged = {"name": body.get("name"), "tags": body.get("tags")}
            for part in ("primary", "secondary"):
                if body.get(part) is not None:
                    merged[part] = to_wire(_merge(old[part], to_record(body[part])))
            super().patch(entity_id, self._normalise(merged, partial=True), context=context)

    def _normalise(self, body: dict, partial: bool = False) -> dict:
        out = dict(body)
        for part in ("primary", "secondary"):
            if out.get(part) is not None:
                out[part] = to_record(out[part])
        primary = out.get("primary")
        if primary:
            updb = primary.get(UPDB, {})
            # NOTE: the real controller raises a minimum under 5 to 5 and stores negatives as 0.
            if "min_password_length" in updb:
                updb["min_password_length"] = max(5, updb["min_password_length"] or 0)
            for key in ("max_attempts", "lockout_duration_minutes"):
                if key in updb:
                    updb[key] = max(0, updb[key] or 0)
            primary.setdefault("ext_jwt", {}).setdefault("allowed_signers", [])
            if primary["ext_jwt"].get("allowed_signers") is None:
                primary["ext_jwt"]["allowed_signers"] = []
        return out

    def prepare(self, record: dict, old: dict | None, body: dict) -> None:
        signers = record["primary"]["ext_jwt"].get("allowed_signers") or []
        required = record["secondary"].get("require_ext_jwt_signer")
        for signer_id in signers:
            if self.find_signer(signer_id) is None:
                raise NotFound("externalJwtSigner", signer_id)
        if required and self.find_signer(required) is None:
            raise NotFound("externalJwtSigner", required)

    def before_delete(self, record: dict) -> None:
        users = sorted(self.users.get(record["id"]))
        if users:
            raise ReferenceExists("authPolicyId", users)
        if record["id"] == "default":
            raise ControllerError(
                errors.ENTITY_CAN_NOT_BE_DELETED, "the default authentication policy can not be deleted"
            )
