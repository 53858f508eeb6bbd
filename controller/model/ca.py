"""Third-party certificate authorities: registered, verified by proof of possession, then trusted.

A CA is created unverified with a ``verificationToken``; it becomes verified
when an admin posts a certificate it signed whose CN is that token. Only a
verified CA is ever trusted: for certificate login (``isAuthEnabled``), OTT-CA
enrollment (``isOttCaEnrollmentEnabled``) and auto enrollment
(``isAutoCaEnrollmentEnabled``).
"""

from __future__ import annotations

from typing import Callable, Sequence

from cryptography import x509
from cryptography.x509.oid import NameOID

from controller import errors
from controller.clock import Clock
from controller.entities import ENTITIES
from controller.model.base import Attr, Core, EntityManager, name_field, scalar, set_field
from controller.model.identity import IdentityManager
from controller.pki import claims
from controller.pki.certs import fingerprint, is_ca, is_expired, load_pem_chain, verify_chain
from controller.policy.roles import validate_role_attributes
from controller.store.change_context import ChangeContext
from controller.store.indexes import UniqueIndex

DEFAULT_NAME_FORMAT = "[caName]-[commonName]"


def common_name(cert: x509.Certificate) -> str:
    values = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(values[0].value) if values else ""


class CaManager(EntityManager):
    declaration = ENTITIES["cas"]
    attrs = (
        Attr("name"),
        Attr("certPem", on_update=False),
        Attr("isAuthEnabled", default=False),
        Attr("isAutoCaEnrollmentEnabled", default=False),
        Attr("isOttCaEnrollmentEnabled", default=False),
        Attr("identityRoles", default=list),
        Attr("identityNameFormat", default=DEFAULT_NAME_FORMAT),
        Attr("externalIdClaim", default=None, public=False),
    )
    filter_fields = (
        name_field(),
        scalar("fingerprint", "string"),
        scalar("isVerified", "bool"),
        scalar("verificationToken", "string"),
        scalar("isAutoCaEnrollmentEnabled", "bool"),
        scalar("isOttCaEnrollmentEnabled", "bool"),
        scalar("isAuthEnabled", "bool"),
        set_field("identityRoles", "identity_roles"),
    )

    def __init__(self, core: Core, *, identities: IdentityManager, pki_clock: Clock):
        """``pki_clock``: issuers are judged at the PKI's time, like the controller's own chain."""
        super().__init__(core)
        self.identities, self.pki_clock = identities, pki_clock
        self.by_fingerprint = UniqueIndex(self.store, self.table, lambda r: r.get("fingerprint"))
        #: fingerprint -> parsed CA certificate (records keep PEM text)
        self._parsed: dict[str, x509.Certificate] = {}
        # NOTE(cas): identities by externalId, for claims of CA certificates (login and
        # auto enrollment); kept here so the identities module stays as it is.
        self._by_external_id = UniqueIndex(self.store, "identities", lambda r: r.get("external_id"))

    def identity_by_external_id(self, external_id: str) -> dict | None:
        identity_id = self._by_external_id.get(external_id)
        return self.identities.find(identity_id) if identity_id else None

    # -- writes -------------------------------------------------------------
    def patch(self, entity_id: str, body: dict, *, context: ChangeContext | None = None) -> None:
        """PATCH overlays the supplied ``externalIdClaim`` subfields on the stored claim."""
        if body.get("externalIdClaim") is not None:
            stored = self.get(entity_id).get("external_id_claim")
            body = {**body, "externalIdClaim": claims.to_wire(claims.merge_patch(stored, body["externalIdClaim"]))}
        super().patch(entity_id, body, context=context)

    def prepare(self, record: dict, old: dict | None, body: dict) -> None:
        if old is None:
            self._prepare_cert(record)
            record.update(is_verified=False, verification_token=self.ids.short())
        if body.get("externalIdClaim") is not None or old is None:
            record["external_id_claim"] = claims.to_record(body.get("externalIdClaim"))
        claims.validate(record.get("external_id_claim"))
        validate_role_attributes(record.get("identity_roles") or [], "identityRoles")
        if not record.get("identity_name_format"):
            record["identity_name_format"] = DEFAULT_NAME_FORMAT

    def _prepare_cert(self, record: dict) -> None:
        pem = record.get("cert_pem")
        try:
            certs = load_pem_chain(pem)
        except errors.BadRequest as ex:
            raise errors.FieldError("certPem", ex.message, pem) from ex
        if not is_ca(certs[0]):
            # NOTE: the real controller answers 500 here; a client mistake is a 400.
            raise errors.BadRequest(
                errors.CERTIFICATE_IS_NOT_CA,
                "the first certificate of certPem is not a CA",
                {"field": "certPem", "reason": "certificate is not a CA", "value": ""},
            )
        record["fingerprint"] = fingerprint(certs[0])
        holder = self.by_fingerprint.get(record["fingerprint"])
        if holder is not None:
            raise errors.FieldError("certPem", f"certificate already used as CA {holder}", "")

    def verify(self, ca_id: str, body, *, context: ChangeContext | None = None) -> None:
        """``verifyCa``: a PEM certificate signed by the CA whose CN is the verification token."""
        record = self.get(ca_id)
        if record.get("is_verified"):
            raise errors.Conflict(errors.CA_ALREADY_VERIFIED, "the CA has already been verified")
        if not isinstance(body, str) or not body.strip():
            raise errors.BadRequest(errors.COULD_NOT_PARSE_BODY, "a PEM certificate is required as a text/plain body")
        try:
            certs = load_pem_chain(body)
        except errors.BadRequest as ex:
            if ex.code in (errors.COULD_NOT_PARSE_PEM_BLOCK, errors.INVALID_CERT_PEM):
                raise errors.BadRequest(errors.COULD_NOT_PARSE_BODY, "the body is not a PEM certificate") from ex
            raise
        leaf = certs[0]
        if common_name(leaf) != record.get("verification_token"):
            raise errors.BadRequest(
                errors.INVALID_COMMON_NAME, "the certificate's common name is not the verification token"
            )
        if not self._verifies(leaf, certs[1:], self.certificate(record), check_leaf=True, client_auth=False):
            raise errors.BadRequest(errors.CERTIFICATE_FAILED_VALIDATION, "the certificate was not signed by the CA")
        self.touch(ca_id, context=context, is_verified=True)

    # -- trust --------------------------------------------------------------
    def certificate(self, record: dict) -> x509.Certificate:
        cert = self._parsed.get(record["fingerprint"])
        if cert is None:
            cert = load_pem_chain(record["cert_pem"])[0]
            self._parsed[record["fingerprint"]] = cert
        return cert

    def _verifies(self, leaf, intermediates: Sequence, ca_cert, *, check_leaf: bool, client_auth: bool) -> bool:
        """Chain ``leaf`` to ``ca_cert``.

        NOTE(pki): issuers are judged at the PKI's (system) time, like the controller's
        own chain; the leaf's own window at the injected clock when ``check_leaf``.
        """
        chain = verify_chain(
            leaf,
            list(intermediates),
            [ca_cert],
            now=self.pki_clock.now(),
            check_leaf_dates=False,
            require_client_auth=client_auth,
        )
        if chain is None:
            return False
        return not (check_leaf and is_expired(leaf, self.clock.now()))

    def issuer_of(
        self, peers: Sequence, want: Callable[[dict], bool], *, check_leaf: bool, client_auth: bool
    ) -> dict | None:
        """The first verified CA accepted by ``want`` that the presented chain verifies against."""
        if not peers:
            return None
        leaf, rest = peers[0], list(peers[1:])
        for record in self.store.all(self.table):
            if record.get("is_verified") and want(record):
                if self._verifies(leaf, rest, self.certificate(record), check_leaf=check_leaf, client_auth=client_auth):
                    return record
        return None

    def verifies_with(self, record: dict, peers: Sequence, *, check_leaf: bool, client_auth: bool) -> bool:
        return bool(peers) and self._verifies(
            peers[0], list(peers[1:]), self.certificate(record), check_leaf=check_leaf, client_auth=client_auth
        )

    # -- delete -------------------------------------------------------------
    def delete_dependents(self, record: dict) -> None:
        """Cascade: the certificate authenticators the CA issued go with it (its enrollments are declared)."""
        ca_cert = self.certificate(record)
        for authenticator in self.store.all("authenticators"):
            if authenticator.get("method") != "cert" or authenticator.get("is_issued_by_network"):
                continue
            if authenticator.get("ca_id") == record["id"] or self._issued(authenticator, ca_cert):
                self.cascades.run("authenticators", authenticator)
                self.store.delete("authenticators", authenticator["id"])

    def _issued(self, authenticator: dict, ca_cert) -> bool:
        try:
            chain = load_pem_chain(authenticator.get("cert_pem") or "")
        except errors.BadRequest:
            return False
        return self._verifies(chain[0], chain[1:], ca_cert, check_leaf=False, client_auth=False)
