"""``method=password``: a username and password checked against a updb authenticator."""

from __future__ import annotations

from controller import errors
from controller.auth.passwords import verify_password
from controller.auth.request import AuthRequest, Collaborators, Proof
from controller.store.change_context import ChangeContext

#: the password authenticator's kind, also its auth policy section (``primary.updb``)
UPDB = "updb"


class PasswordMethod:
    """``method=password``: a updb authenticator's username and Argon2id hash."""

    name = "password"
    #: the authenticators it checks (their ``method``, and their key in an identity's ``authenticators``)
    authenticator = UPDB
    #: its OIDC login page, ``/oidc/login/username`` (``/oidc/login/password`` also works)
    login_page = "username"

    def __init__(self, *, store, authenticators, identities):
        self.store, self.authenticators, self.identities = store, authenticators, identities
        #: failures per authenticator, in memory like the real controller (reset on success)
        self.failures: dict[str, int] = {}

    @classmethod
    def build(cls, use: Collaborators) -> PasswordMethod:
        return cls(store=use.store, authenticators=use.authenticators, identities=use.identities)

    def authenticate(self, request: AuthRequest) -> Proof:
        username, password = request.body.get("username"), request.body.get("password")
        for field, value in (("username", username), ("password", password)):
            if value is not None and not isinstance(value, str):
                raise errors.FieldError(field, f"{field} in body must be of type string", value)
        if not username or not password:
            raise errors.BadRequest(
                errors.COULD_NOT_VALIDATE,
                cause={"code": errors.UNHANDLED, "message": "username and password fields are required"},
            )
        with self.store.lock:
            authenticator = self.authenticators.find_updb(username)
            if authenticator is None:
                raise errors.InvalidAuth()
            identity = self.identities.find(authenticator["identity_id"])
            if identity is None or self.identities.is_disabled(identity):
                raise errors.InvalidAuth()
            updb = self.identities.auth_policy_of(identity).get("primary", {}).get(UPDB, {})
            if not updb.get("allowed", True):
                raise errors.InvalidAuth()
        if not verify_password(password, authenticator):
            self._fail(authenticator, identity, updb, request.context)
            raise errors.InvalidAuth()
        self.failures.pop(authenticator["id"], None)
        return Proof(identity, authenticator["id"])

    def _fail(self, authenticator: dict, identity: dict, updb: dict, context: ChangeContext | None) -> None:
        count = self.failures.get(authenticator["id"], 0) + 1
        max_attempts = updb.get("max_attempts") or 0
        if max_attempts and count >= max_attempts:
            self.failures.pop(authenticator["id"], None)
            self.identities.disable(identity["id"], updb.get("lockout_duration_minutes") or 0, context=context)
        else:
            self.failures[authenticator["id"]] = count
