"""Enrollments: outstanding one-time tokens and their JWTs (the methods are declared in ``controller/enroll``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Callable

from controller import errors
from controller.clock import parse_rfc3339, rfc3339
from controller.entities import ENTITIES
from controller.model.authenticator import AuthenticatorManager
from controller.model.base import Attr, Core, EntityManager, scalar
from controller.model.identity import IdentityManager
from controller.store.change_context import ChangeContext
from controller.store.indexes import MultiIndex, UniqueIndex
from controller.store.query import Field


class EnrollmentManager(EntityManager):
    declaration = ENTITIES["enrollments"]
    unique_names = False
    attrs = (
        Attr("method", on_update=False),
        Attr("identityId", on_update=False, omit_none=True),
        Attr("caId", on_update=False, omit_none=True),
        Attr("username", on_update=False, omit_none=True),
        Attr("expiresAt", on_update=False),
        Attr("token", on_create=False, on_update=False),
    )
    filter_fields = (
        scalar("method", "string"),
        scalar("identityId", "string"),
        # the real store's foreign key symbol, which the Admin Console filters on (identity="ID")
        scalar("identity", "string", key="identity_id"),
        scalar("token", "string"),
        scalar("expiresAt", "datetime"),
        Field("edgeRouterId", "string", lambda r: r.get("edge_router_id")),
        Field("transitRouterId", "string", lambda r: r.get("transit_router_id")),
    )

    def __init__(
        self,
        core: Core,
        *,
        identities: IdentityManager,
        authenticators: AuthenticatorManager,
        sign_jwt: Callable[[dict], str],
        identity_fields: dict[str, str | None],
        duration_minutes: int,
        router_duration_minutes: int,
    ):
        """``sign_jwt`` turns a record into its enrollment JWT (``controller.enroll.jwt``).

        ``identity_fields`` are the enrollments an identity may open (``controller.enroll.methods``):
        method -> the field its value fills (``caId``, ``username``), None for a flag.
        """
        super().__init__(core)
        self.identity_fields = dict(identity_fields)
        self.identities, self.authenticators, self.sign_jwt = identities, authenticators, sign_jwt
        self.duration_minutes, self.router_duration_minutes = duration_minutes, router_duration_minutes
        self.by_identity = MultiIndex(self.store, self.table, lambda r: r.get("identity_id"))
        self.by_token = UniqueIndex(self.store, self.table, lambda r: r.get("token"))

    # -- creation -----------------------------------------------------------
    def default_expiry(self) -> str:
        minutes = self.duration_minutes
        return rfc3339(self.clock.now() + timedelta(minutes=max(5, minutes)))

    def create_for_identity_request(self, identity_id: str, request: dict) -> None:
        """``POST /identities`` with ``enrollment {<method>: flag or value}`` (``identity_fields``)."""
        for method, field_name in self.identity_fields.items():
            value = request.get(method)
            if not value:
                continue
            body = {"method": method, "identityId": identity_id}
            if field_name is not None:
                body[field_name] = value
            self.create({**body, "expiresAt": self.default_expiry()})

    def identity_method(self, field_name: str | None) -> str:
        """The identity enrollment whose value fills ``field_name`` (None: the flag one)."""
        return next(method for method, name in self.identity_fields.items() if name == field_name)

    def create_for_router(self, router_id: str, method: str = "erott", expires_at: str | None = None) -> dict:
        """A router's one-time enrollment (``erott`` edge router, ``trott`` transit router); returns the record.

        Any outstanding enrollment of the router is replaced (re-enroll).
        """
        key = "edge_router_id" if method == "erott" else "transit_router_id"
        now = self._now()
        minutes = max(5, self.router_duration_minutes)
        record = {
            "id": self.ids.short(),
            "created_at": now,
            "updated_at": now,
            "tags": {},
            "method": method,
            "identity_id": None,
            "ca_id": None,
            "username": None,
            key: router_id,
            "token": self.ids.uuid(),
            "expires_at": expires_at or rfc3339(self.clock.now() + timedelta(minutes=minutes)),
        }
        record["jwt"] = self.sign_jwt(record)
        with self.store.lock, self.store.transaction():
            self.delete_for_router(router_id)
            self.store.insert(self.table, record["id"], record)
        return record

    def delete_for_router(self, router_id: str) -> None:
        with self.store.lock, self.store.transaction():
            for record in self.store.all(self.table):
                if router_id in (record.get("edge_router_id"), record.get("transit_router_id")):
                    self.store.delete(self.table, record["id"])

    def prepare(self, record: dict, old: dict | None, body: dict) -> None:
        identity = self.identities.get(record["identity_id"])
        for other_id in self.by_identity.get(identity["id"]):
            other = self.find(other_id)
            if other and other["id"] != record["id"] and other["method"] == record["method"]:
                raise errors.Conflict(
                    errors.ENROLLMENT_EXISTS, f"an enrollment of method {record['method']} is outstanding"
                )
        field_name = self.identity_fields.get(record["method"])
        if field_name == "caId":
            ca_id = record.get("ca_id")
            if not ca_id:
                raise errors.FieldError("caId", f"caId in body is required for method {record['method']}", ca_id)
            self.require_ref(record, "ca_id")
        else:
            record["ca_id"] = None
        if field_name == "username":
            username = record.get("username")
            if not username or not (4 <= len(username) <= 100):
                raise errors.FieldError("username", "username in body should be between 4 and 100 chars long", username)
            if self.authenticators.find_updb(username) is not None:
                raise errors.FieldError(
                    "username", f"duplicate value '{username}' in unique index on authenticators store", username
                )
        else:
            record["username"] = None
        record["expires_at"] = self._future(record["expires_at"])
        record["token"] = self.ids.uuid()
        record["jwt"] = self.sign_jwt(record)

    def refresh(self, enrollment_id: str, expires_at: str, *, context: ChangeContext | None = None) -> None:
        """New expiry, new token and JWT: the earlier JWT stops working."""
        with self.store.lock, self.store.transaction(context):
            record = dict(self.get(enrollment_id))
            record.update(expires_at=self._future(expires_at), token=self.ids.uuid(), updated_at=self._now())
            record["jwt"] = self.sign_jwt(record)
            self.store.put(self.table, enrollment_id, record)

    def _future(self, expires_at: str) -> str:
        """``expiresAt`` normalised, or a field error when it is already past (as the real controller)."""
        expires = parse_rfc3339(expires_at)
        if expires < self.clock.now():
            raise errors.FieldError("expiresAt", "expiresAt must be in the future", expires_at)
        return rfc3339(expires)

    # -- reads --------------------------------------------------------------
    def find_by_token(self, token: str) -> dict | None:
        enrollment_id = self.by_token.get(token)
        return self.find(enrollment_id) if enrollment_id else None

    def is_expired(self, record: dict) -> bool:
        return parse_rfc3339(record["expires_at"]) <= self.clock.now()
