"""``updb``: a one-time token and a password create the username/password login.

The username is the one chosen when the enrollment was created; a username in
the body is ignored, as by the real controller.
"""

from __future__ import annotations

from controller import errors
from controller.enroll.registry import Collaborators, EnrollRequest, EnrollResult, OneTimeTokens, Route


class UpdbMethod:
    name = "updb"
    #: an identity's create body names the login: ``{"updb": "<username>"}``
    identity_field = "username"
    summary = "Enroll a username and password"
    route = Route("enrollUpdb", body=("password", "username"), token_query=True)

    def __init__(self, tokens: OneTimeTokens, *, store, authenticators):
        self.tokens, self.store, self.authenticators = tokens, store, authenticators

    @classmethod
    def build(cls, use: Collaborators) -> UpdbMethod:
        return cls(use.tokens, store=use.store, authenticators=use.authenticators)

    def enroll(self, request: EnrollRequest) -> EnrollResult:
        record, identity = self.tokens.pending_identity(request.token, self.name)
        password = request.data.get("password")
        if not isinstance(password, str) or not password:
            raise errors.FieldError("password", "password in body is required", None)
        with self.store.lock, self.store.transaction(request.context):
            self.tokens.claim(record)
            self.authenticators.create_updb(identity["id"], record["username"], password)
        return EnrollResult({})
