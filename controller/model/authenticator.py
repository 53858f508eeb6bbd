"""Authenticators: how an identity proves itself (``updb`` password or ``cert``)."""

from __future__ import annotations

from controller import errors
from controller.auth.password import UPDB
from controller.auth.passwords import check_rules, hash_password, verify_password
from controller.auth.primary import AUTHENTICATOR_KINDS
from controller.entities import ENTITIES
from controller.errors import Conflict, ControllerError, FieldError, NotFound, Unauthorized
from controller.model.auth_policy import password_rules
from controller.model.base import Attr, Core, EntityManager, scalar
from controller.model.identity import IdentityManager
from controller.store.change_context import ChangeContext
from controller.store.indexes import MultiIndex, UniqueIndex

#: the kinds of authenticator record, from the primary methods that check one
METHODS = AUTHENTICATOR_KINDS


class AuthenticatorManager(EntityManager):
    declaration = ENTITIES["authenticators"]
    unique_names = False
    attrs = (
        Attr("method", on_update=False),
        Attr("identityId", on_update=False),
        Attr("username", public=True),
        Attr("certPem", on_update=False),
    )
    filter_fields = (
        scalar("method", "string"),
        scalar("identityId", "string"),
        # the real store's foreign key symbol, which the Admin Console filters on (identity="ID")
        scalar("identity", "string", key="identity_id"),
        scalar("username", "string"),
        scalar("fingerprint", "string"),
        scalar("isIssuedByNetwork", "bool"),
    )

    def __init__(self, core: Core, *, identities: IdentityManager):
        super().__init__(core)
        self.identities = identities
        self.by_identity = MultiIndex(self.store, self.table, lambda r: r.get("identity_id"))
        self.by_username = UniqueIndex(
            self.store, self.table, lambda r: r.get("username") if r.get("method") == UPDB else None
        )
        self.by_fingerprint = UniqueIndex(self.store, self.table, lambda r: r.get("fingerprint"))

    # -- reads --------------------------------------------------------------
    def of_identity(self, identity_id: str) -> list[dict]:
        return sorted((self.find(a) for a in self.by_identity.get(identity_id)), key=lambda r: r["id"])

    def find_updb(self, username: str) -> dict | None:
        auth_id = self.by_username.get(username)
        return self.find(auth_id) if auth_id else None

    def find_cert(self, fingerprint: str) -> dict | None:
        auth_id = self.by_fingerprint.get(fingerprint)
        return self.find(auth_id) if auth_id else None

    # -- writes -------------------------------------------------------------
    def prepare(self, record: dict, old: dict | None, body: dict) -> None:
        identity = self.identities.get(record["identity_id"])
        if old is None:
            self._check_one_per_method(record)
        if record["method"] == UPDB:
            self._prepare_updb(record, old, body, identity)
        elif old is None:
            self._prepare_cert(record)
        elif body.get("password") is not None or body.get("username") is not None:
            raise ControllerError(
                errors.CAN_NOT_UPDATE_AUTHENTICATOR, "only updb authenticators have a username and password"
            )

    def _check_one_per_method(self, record: dict) -> None:
        for other in self.of_identity(record["identity_id"]):
            if other["method"] == record["method"]:
                raise Conflict(
                    errors.MAX_AUTHENTICATOR_METHODS_REACHED,
                    f"the identity already has an authenticator of method {record['method']}",
                )

    def _prepare_updb(self, record: dict, old: dict | None, body: dict, identity: dict) -> None:
        username, password = record.get("username"), body.get("password")
        if not username:
            raise FieldError("username", "username in body is required", username)
        holder = self.by_username.get(username)
        if holder is not None and holder != record["id"]:
            raise FieldError(
                "username", f"duplicate value '{username}' in unique index on authenticators store", username
            )
        if old is None and not password:
            raise FieldError("password", "password in body is required", None)
        if password:
            self.check_password_rules(password, identity)
            record.update(hash_password(password))
        record["cert_pem"] = None

    def _prepare_cert(self, record: dict) -> None:
        from controller.pki.certs import fingerprint, load_pem_chain

        pem = record.get("cert_pem")
        if not pem:
            raise FieldError("certPem", "certPem in body is required", pem)
        leaf = load_pem_chain(pem)[0]
        record["fingerprint"] = fingerprint(leaf)
        if self.by_fingerprint.get(record["fingerprint"]) is not None:
            raise Conflict(
                errors.CERT_IN_USE, "the certificate is already in use", {"fingerprint": record["fingerprint"]}
            )
        record["username"] = None
        record.setdefault("is_issued_by_network", False)

    def check_password_rules(self, password: str, identity: dict) -> None:
        policy = self.identities.auth_policy_of(identity)
        reason = check_rules(password, password_rules(policy))
        if reason:
            raise FieldError("password", reason, None)

    def create_updb(self, identity_id: str, username: str, password: str) -> str:
        return self.create({"identityId": identity_id, "method": UPDB, "username": username, "password": password})

    def create_cert(self, identity_id: str, cert_pem: str, fingerprint: str, issued_by_network: bool) -> str:
        """Attach a certificate already checked by the caller (enrollment)."""
        now = self._now()
        record = {
            "id": self.ids.short(),
            "created_at": now,
            "updated_at": now,
            "tags": {},
            "method": "cert",
            "identity_id": identity_id,
            "cert_pem": cert_pem,
            "fingerprint": fingerprint,
            "username": None,
            "is_issued_by_network": issued_by_network,
        }
        with self.store.lock, self.store.transaction():
            self._check_one_per_method(record)
            if self.by_fingerprint.get(fingerprint) is not None:
                raise Conflict(errors.CERT_IN_USE, "the certificate is already in use", {"fingerprint": fingerprint})
            self.store.insert(self.table, record["id"], record)
        return record["id"]

    def update_own(
        self, identity_id: str, auth_id: str, body: dict, partial: bool, *, context: ChangeContext | None = None
    ) -> None:
        """Change one's own password: ``currentPassword`` must match (401 otherwise)."""
        record = self.get_own(identity_id, auth_id)
        if record["method"] != UPDB:
            raise ControllerError(errors.CAN_NOT_UPDATE_AUTHENTICATOR, "only updb authenticators have a password")
        if not verify_password(body.get("currentPassword"), record):
            raise Unauthorized(cause={"field": "currentPassword", "reason": "invalid current password", "value": ""})
        changes = {k: v for k, v in body.items() if k != "currentPassword"}
        (self.patch if partial else self.update)(auth_id, changes, context=context)

    def get_own(self, identity_id: str, auth_id: str) -> dict:
        record = self.get(auth_id)
        if record.get("identity_id") != identity_id:
            raise NotFound(self.label, auth_id)  # the same answer as an unknown id
        return record
