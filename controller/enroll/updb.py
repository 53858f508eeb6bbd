"""``updb``: a one-time token and a password create the username/password login.

The username is the one chosen when the enrollment was created; a username in
the body is ignored, as by the real controller.
"""

from __future__ import annotations

from controller import errors
from controller.enroll.registry import EnrollRequest, EnrollResult, claim, pending_identity


class UpdbMethod:
    name = "updb"

    def __init__(self, ctl):
        self.ctl = ctl

    def enroll(self, request: EnrollRequest) -> EnrollResult:
        ctl = self.ctl
        record, identity = pending_identity(ctl, request.token, self.name)
        password = request.data.get("password")
        if not isinstance(password, str) or not password:
            raise errors.FieldError("password", "password in body is required", None)
        with ctl.store.lock, ctl.store.transaction():
            claim(ctl, record)
            ctl.authenticators.create_updb(identity["id"], record["username"], password)
        return EnrollResult({})
