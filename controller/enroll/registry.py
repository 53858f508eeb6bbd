"""The enrollment methods, one file each, in a small registry.

Each method's module declares it once: its ``name``, its ``identity_field`` (what
an identity's create body gives it, when it can be opened there), its ``summary``
and ``route`` (how its own ``POST /enroll/<name>`` is served) and ``build`` (which
of the :class:`Collaborators` it takes). ``enroll/methods.py`` lists them.

Every method takes an :class:`EnrollRequest` (token, CSRs, JSON data and the
TLS peer chain) and returns an :class:`EnrollResult` (the JSON ``data`` and,
for methods issuing a certificate, the PEM a client may ask for instead).
One-time tokens are looked up and consumed here, the same way for every method.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from controller import errors
from controller.store.change_context import ChangeContext

#: ``identity_field`` of a method an identity's create body opens with a flag (``{"ott": true}``)
FLAG = "<flag>"


@dataclass(frozen=True)
class Route:
    """How a method's own ``POST /enroll/<name>`` is served; the API layer builds the operation from it."""

    op_id: str
    #: the JSON body fields the method reads, in document order (None: no body schema)
    body: tuple[str, ...] | None = None
    #: the token may come as ``?token=``
    token_query: bool = False
    #: the body may be a PEM CSR instead of JSON
    pem_body: bool = False
    #: :class:`EnrollRequest` fields this route fixes
    options: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Collaborators:
    """Everything an enrollment method may use; each method's ``build`` takes the few it needs."""

    store: Any
    ids: Any
    pki: Any
    identities: Any
    authenticators: Any
    enrollments: Any
    cas: Any
    routers: Any
    auth_policies: Any
    external_jwt_signers: Any
    ext_jwt: Any
    tokens: OneTimeTokens


@dataclass
class EnrollRequest:
    method: str
    token: str | None = None
    #: the client CSR (``clientCsr``, ``certCsr`` or a PEM body)
    csr: str | None = None
    #: the router server CSR (``serverCertCsr`` / ``serverCsr``)
    server_csr: str | None = None
    data: dict = field(default_factory=dict)
    #: the TLS peer chain, leaf first (never from a header)
    peers: list = field(default_factory=list)
    headers: dict = field(default_factory=dict)
    #: the ``Authorization: Bearer`` values, as the API layer read them
    bearer_tokens: tuple[str, ...] = ()
    #: ``/enroll?method=ca`` honours a requested name; ``/enroll/ca`` ignores it
    use_requested_name: bool = True
    #: the source of the enrollment's writes
    context: ChangeContext | None = None


@dataclass
class EnrollResult:
    data: dict
    #: what ``Accept: application/x-pem-file`` gets instead of JSON
    pem: str | None = None


class EnrollmentMethods:
    """Method name -> method object; ``enroll`` runs the one a request names."""

    def __init__(self, methods: list):
        self.methods = {}
        for method in methods:
            self.register(method)

    def register(self, method) -> None:
        for name in getattr(method, "names", (method.name,)):
            self.methods[name] = method

    def enroll(self, request: EnrollRequest) -> EnrollResult:
        method = self.methods.get(request.method or "")
        if method is None:
            raise errors.BadRequest(
                errors.INVALID_ENROLL_METHOD,
                f"the enrollment method {request.method!r} is not supported",
                {"field": "method", "reason": "unsupported enrollment method", "value": request.method or ""},
            )
        return method.enroll(request)


class OneTimeTokens:
    """Outstanding enrollments, looked up and consumed the same way for every method."""

    def __init__(self, *, enrollments, identities, store):
        self.enrollments, self.identities, self.store = enrollments, identities, store

    def pending(self, token: str | None, method: str) -> dict:
        """The outstanding enrollment of ``token``, checked for method and expiry.

        Unknown or used token: 400 INVALID_ENROLLMENT_TOKEN; another method:
        400 INVALID_ENROLL_METHOD; past ``expiresAt`` (injected clock): 400 ENROLLMENT_EXPIRED.
        """
        record = self.enrollments.find_by_token(token) if isinstance(token, str) and token else None
        if record is None:
            raise invalid_token()
        if record["method"] != method:
            raise errors.BadRequest(errors.INVALID_ENROLL_METHOD, f"the enrollment token is not for method {method}")
        if self.enrollments.is_expired(record):
            raise expired()
        return record

    def pending_identity(self, token: str | None, method: str) -> tuple[dict, dict]:
        """``pending`` plus the enrollment's identity (gone identity: the token is invalid)."""
        record = self.pending(token, method)
        identity = self.identities.find(record.get("identity_id"))
        if identity is None:
            raise invalid_token()
        return record, identity

    def claim(self, record: dict) -> None:
        """Consume a one-time enrollment; call under the store lock, inside the transaction.

        APPSEC(single-use): the check and the delete happen under one lock, so two
        concurrent requests with the same token cannot both succeed.
        """
        current = self.store.get("enrollments", record["id"])
        if current is None or current.get("token") != record["token"]:
            raise invalid_token()
        self.store.delete("enrollments", record["id"])


def expired() -> errors.Expired:
    return errors.Expired(errors.ENROLLMENT_EXPIRED, "The enrollment token has expired")


def invalid_token() -> errors.BadRequest:
    return errors.BadRequest(errors.INVALID_ENROLLMENT_TOKEN, "The supplied token is not valid")


def cert_in_use(fingerprint: str) -> errors.Conflict:
    return errors.Conflict(
        errors.CERT_IN_USE,
        "The certificate supplied is already associated with another identity",
        {"message": "the certificate is already in use", "data": {"fingerprint": fingerprint}},
    )
