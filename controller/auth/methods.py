"""Primary authentication methods, one small class each, in a registry.

``authenticate(call)`` picks the method from ``?method=``, lets it find the
identity, then opens the API session the same way for every method.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from controller import errors
from controller.auth.passwords import verify_password
from controller.clock import rfc3339
from controller.model.api_session import go_time


@dataclass
class Proof:
    """What a method established: the identity and how."""

    identity: dict
    authenticator_id: str
    flags: dict = field(default_factory=dict)


class PasswordMethod:
    """``method=password``: a updb authenticator's username and Argon2id hash."""

    name = "password"

    def __init__(self, ctl):
        self.ctl = ctl
        #: failures per authenticator, in memory like the real controller (reset on success)
        self.failures: dict[str, int] = {}

    def authenticate(self, call) -> Proof:
        body = _fold_keys(call.body or {})
        username, password = body.get("username"), body.get("password")
        if not username or not password:
            raise errors.BadRequest(errors.COULD_NOT_VALIDATE, cause={"code": errors.UNHANDLED, "message": "username and password fields are required"})
        with self.ctl.store.lock:
            authenticator = self.ctl.authenticators.find_updb(username)
            if authenticator is None:
                raise errors.InvalidAuth()
            identity = self.ctl.identities.find(authenticator["identity_id"])
            if identity is None or self.ctl.identities.is_disabled(identity):
                raise errors.InvalidAuth()
            updb = self.ctl.identities.auth_policy_of(identity).get("primary", {}).get("updb", {})
            if not updb.get("allowed", True):
                raise errors.InvalidAuth()
        if not verify_password(password, authenticator):
            self._fail(authenticator, identity, updb)
            raise errors.InvalidAuth()
        self.failures.pop(authenticator["id"], None)
        return Proof(identity, authenticator["id"])

    def _fail(self, authenticator: dict, identity: dict, updb: dict) -> None:
        count = self.failures.get(authenticator["id"], 0) + 1
        max_attempts = updb.get("max_attempts") or 0
        if max_attempts and count >= max_attempts:
            self.failures.pop(authenticator["id"], None)
            self.ctl.identities.disable(identity["id"], updb.get("lockout_duration_minutes") or 0)
        else:
            self.failures[authenticator["id"]] = count


def _fold_keys(body: dict) -> dict:
    """The real controller ignores the case of authenticate body keys."""
    known = {"username": "username", "password": "password", "configtypes": "configTypes",
             "envinfo": "envInfo", "sdkinfo": "sdkInfo"}
    if not isinstance(body, dict):
        return {}
    return {known.get(key.lower(), key): value for key, value in body.items()}


class Authenticator:
    """Runs a method from the registry and opens the API session."""

    def __init__(self, ctl, methods: list):
        self.ctl = ctl
        self.methods = {method.name: method for method in methods}

    def register(self, method) -> None:
        self.methods[method.name] = method

    def authenticate(self, call) -> dict:
        name = call.query("method")
        method = self.methods.get(name)
        if method is None:
            raise errors.BadRequest(errors.INVALID_AUTH_METHOD, cause={"field": "method", "reason": f"method {name} is not supported", "value": name})
        try:
            proof = method.authenticate(call)
        except errors.ControllerError as ex:
            self.ctl.events.authentication(False, name, remote_address=call.client_ip, reason=ex.code)
            raise
        body = _fold_keys(call.body or {})
        flags = {"is_mfa_required": self.ctl.mfa_enabled(proof.identity["id"]), **proof.flags}
        record = self.ctl.api_sessions.open(proof.identity, proof.authenticator_id, body, call.client_ip, **flags)
        self.ctl.events.authentication(True, name, identity_id=proof.identity["id"],
                                       authenticator_id=proof.authenticator_id, api_session_id=record["id"],
                                       remote_address=call.client_ip)
        view = self.ctl.api_sessions.view(record, current=True)
        call.set_header("zt-session", record["token"])
        call.set_header("expiration-seconds", str(view["expirationSeconds"]))
        call.set_header("expires-at", go_time(self.ctl.api_sessions.last_activity(record) + self.ctl.api_sessions.timeout))
        if record.get("is_cert_extend_requested") or record.get("is_cert_key_roll_requested"):
            call.set_header("ziti-authenticator-extend-requested", "true")
        return view


__all__ = ["Authenticator", "PasswordMethod", "Proof", "rfc3339"]
