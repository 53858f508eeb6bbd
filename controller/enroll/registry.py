"""The enrollment methods, one file each, in a small registry.

Every method takes an :class:`EnrollRequest` (token, CSRs, JSON data and the
TLS peer chain) and returns an :class:`EnrollResult` (the JSON ``data`` and,
for methods issuing a certificate, the PEM a client may ask for instead).
One-time tokens are looked up and consumed here, the same way for every method.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controller import errors
from controller.store.change_context import ChangeContext


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
