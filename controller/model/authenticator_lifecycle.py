"""Certificate lifecycle of authenticators: extend, extend-verify, request-extend, re-enroll.

Extension is two-step like the real controller: ``extend`` issues a new
certificate and keeps it pending; the old certificate keeps working until
``extend-verify`` proves the client received the new one.
"""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization

from controller import errors
from controller.auth.password import UPDB
from controller.clock import rfc3339
from controller.model.api_session import ApiSessionManager
from controller.model.authenticator import AuthenticatorManager
from controller.model.base import Core
from controller.model.ca import CaManager
from controller.model.enrollment import EnrollmentManager
from controller.pki.ca import ControllerPKI
from controller.pki.certs import fingerprint, load_pem_chain
from controller.pki.csr import parse_csr
from controller.store.change_context import ChangeContext

_EXTEND_FLAGS = ("is_cert_extend_requested", "is_cert_key_roll_requested")


class CertLifecycle:
    """State transitions of certificate (and updb, for re-enroll) authenticators."""

    def __init__(
        self,
        core: Core,
        *,
        authenticators: AuthenticatorManager,
        enrollments: EnrollmentManager,
        cas: CaManager,
        api_sessions: ApiSessionManager,
        pki: ControllerPKI,
    ):
        self.store, self.clock, self.cascades = core.store, core.clock, core.cascades
        self.authenticators, self.enrollments, self.cas = authenticators, enrollments, cas
        self.api_sessions, self.pki = api_sessions, pki

    # -- extension by the identity itself --------------------------------------
    def extend(
        self, identity_id: str, auth_id: str, peers: list, csr_pem: str, *, context: ChangeContext | None = None
    ) -> dict:
        """``extendCurrentIdentityAuthenticator``: a new cert, pending until verified."""
        record = self.authenticators.get_own(identity_id, auth_id)
        if record["method"] != "cert" or not record.get("is_issued_by_network"):
            raise errors.Conflict(
                errors.CAN_NOT_UPDATE_AUTHENTICATOR, "only certificates issued by the network can be extended"
            )
        # APPSEC(extend): the certificate being extended must be the one presented
        # on this TLS connection, chaining to the controller CA with clientAuth.
        if not peers or fingerprint(peers[0]) != record.get("fingerprint"):
            raise errors.Unauthorized()
        chain, _ = self.pki.verify_peer_chain(peers, require_client_auth=True)
        if chain is None:
            raise errors.Unauthorized()
        if not csr_pem or not csr_pem.strip():
            raise errors.FieldError("clientCertCsr", "clientCertCsr in body is required", csr_pem)
        csr = parse_csr(csr_pem)
        new_cert = self.pki.extend_identity_cert(csr, peers[0])
        chain_pem = self.pki.chain_pem(new_cert)
        rolled = _public_der(new_cert) != _public_der(peers[0])
        self.authenticators.touch(
            auth_id,
            context=context,
            unverified_cert_pem=chain_pem,
            unverified_fingerprint=fingerprint(new_cert),
            last_extend_rolled_keys=rolled,
        )
        return {"clientCert": chain_pem, "ca": self.pki.ca_bundle_pem()}

    def verify_extend(
        self, identity_id: str, auth_id: str, cert_pem: str, *, context: ChangeContext | None = None
    ) -> None:
        """``extendVerifyCurrentIdentityAuthenticator``: the pending cert replaces the old one."""
        with self.store.lock, self.store.transaction(context):
            record = self.authenticators.get_own(identity_id, auth_id)
            if record["method"] != "cert" or not record.get("unverified_fingerprint"):
                raise errors.Conflict(errors.CAN_NOT_UPDATE_AUTHENTICATOR, "no certificate extension is pending")
            try:
                leaf = load_pem_chain(cert_pem)[0]
            except errors.BadRequest as ex:
                raise errors.BadRequest(errors.INVALID_CLIENT_CERT, "clientCert is not a PEM certificate") from ex
            if fingerprint(leaf) != record["unverified_fingerprint"]:
                raise errors.BadRequest(
                    errors.INVALID_CLIENT_CERT, "clientCert is not the certificate issued by the extension"
                )
            self.authenticators.touch(
                auth_id,
                cert_pem=record["unverified_cert_pem"],
                fingerprint=record["unverified_fingerprint"],
                unverified_cert_pem=None,
                unverified_fingerprint=None,
                is_extend_requested=False,
                is_key_roll_requested=False,
                extend_requested_at=None,
            )
            self._set_session_flags(record, False, False)

    # -- admin operations ---------------------------------------------------------
    def request_extend(self, auth_id: str, roll_keys: bool, *, context: ChangeContext | None = None) -> None:
        """``requestExtendAuthenticator``: flag a cert authenticator (403 for any other)."""
        with self.store.lock, self.store.transaction(context):
            record = self.authenticators.get(auth_id)
            if record["method"] != "cert":
                raise errors.Forbidden(
                    errors.FORBIDDEN,
                    "only certificate authenticators can be asked to extend",
                    {"field": "method", "reason": "not a certificate authenticator", "value": record["method"]},
                )
            self.authenticators.touch(
                auth_id,
                is_extend_requested=True,
                is_key_roll_requested=bool(roll_keys),
                extend_requested_at=rfc3339(self.clock.now()),
            )
            self._set_session_flags(record, True, bool(roll_keys))

    def re_enroll(self, auth_id: str, expires_at: str, *, context: ChangeContext | None = None) -> str:
        """``reEnrollAuthenticator``: replace the authenticator by an enrollment; return its id.

        a password -> the enrollment carrying a username (the same one); a network or
        unknown cert -> the flag enrollment; a cert issued by a registered, verified
        CA -> the enrollment carrying that CA's id.
        """
        with self.store.lock, self.store.transaction(context):
            record = self.authenticators.get(auth_id)
            body = {"identityId": record["identity_id"], "expiresAt": expires_at, **self._enrollment_for(record)}
            for other_id in list(self.enrollments.by_identity.get(record["identity_id"])):
                other = self.enrollments.find(other_id)
                if other and other["method"] == body["method"]:
                    self.store.delete("enrollments", other_id)  # the re-enrollment supersedes it
            self.cascades.run("authenticators", record)
            self.store.delete("authenticators", auth_id)
            return self.enrollments.create(body)

    def _enrollment_for(self, record: dict) -> dict:
        if record["method"] == UPDB:
            return {"method": self.enrollments.identity_method("username"), "username": record.get("username")}
        ca = None
        if not record.get("is_issued_by_network"):
            ca = self.cas.find(record.get("ca_id")) if record.get("ca_id") else None
            if ca is None:
                try:
                    chain = load_pem_chain(record.get("cert_pem") or "")
                except errors.BadRequest:
                    chain = []
                ca = self.cas.issuer_of(chain, lambda r: True, check_leaf=False, client_auth=False)
        if ca is None:
            return {"method": self.enrollments.identity_method(None)}
        return {"method": self.enrollments.identity_method("caId"), "caId": ca["id"]}

    def _set_session_flags(self, authenticator: dict, extend: bool, roll: bool) -> None:
        """Live sessions opened with ``authenticator`` show (or stop showing) the request."""
        sessions = self.api_sessions
        for session_id in list(sessions.by_identity.get(authenticator["identity_id"])):
            session = sessions.find(session_id)
            if session and session.get("authenticator_id") == authenticator["id"]:
                self.store.put(
                    sessions.table, session_id, {**session, _EXTEND_FLAGS[0]: extend, _EXTEND_FLAGS[1]: roll and extend}
                )


def _public_der(cert) -> bytes:
    return cert.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
