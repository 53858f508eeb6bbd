"""``ca``: auto enrollment with a certificate from a verified third-party CA.

No token: the identity is created here, named by the CA's ``identityNameFormat``,
carrying the CA's ``identityRoles``. With an ``externalIdClaim`` the identity
gets that externalId and no authenticator (logins then match the claim, so the
certificate may rotate); otherwise a cert authenticator pins the fingerprint.
"""

from __future__ import annotations

from controller import errors
from controller.enroll.registry import Collaborators, EnrollRequest, EnrollResult, Route, cert_in_use
from controller.model.ca import DEFAULT_NAME_FORMAT, common_name
from controller.pki import claims
from controller.pki.certs import cert_pem, fingerprint

MAX_NAME_SUFFIX = 999999


class CaMethod:
    name = "ca"
    identity_field = None
    summary = "Auto-enroll with a certificate from a verified third-party CA"
    #: ``/enroll/ca`` ignores a requested name (``/enroll?method=ca`` honours it)
    route = Route("enrollCa", options={"use_requested_name": False})

    def __init__(self, *, store, ids, cas, identities, authenticators):
        self.store, self.ids, self.cas = store, ids, cas
        self.identities, self.authenticators = identities, authenticators

    @classmethod
    def build(cls, use: Collaborators) -> CaMethod:
        return cls(
            store=use.store, ids=use.ids, cas=use.cas, identities=use.identities, authenticators=use.authenticators
        )

    def enroll(self, request: EnrollRequest) -> EnrollResult:
        if self.store.count("cas") == 0:
            raise errors.BadRequest(errors.ENROLLMENT_NO_VALID_CAS, "no certificate authorities are registered")
        ca = (
            self.cas.issuer_of(
                request.peers, lambda r: bool(r.get("is_auto_ca_enrollment_enabled")), check_leaf=True, client_auth=True
            )
            if request.peers
            else None
        )
        if ca is None:
            raise errors.BadRequest(
                errors.CERT_FAILED_VALIDATION, "no verified CA with auto enrollment validates the client certificate"
            )
        leaf = request.peers[0]
        try:
            external_id = claims.external_id(ca.get("external_id_claim"), leaf)
        except claims.ClaimNotFound as ex:
            raise errors.BadRequest(
                errors.MISSING_CERT_CLAIM, f"the certificate does not carry the CA's externalId claim: {ex}"
            ) from ex
        fp = fingerprint(leaf)
        identity_id = self.ids.short()
        requested = request.data.get("name") if request.use_requested_name else None
        with self.store.lock, self.store.transaction(request.context):
            if external_id is None and self.authenticators.find_cert(fp) is not None:
                raise cert_in_use(fp)
            if external_id is not None and self.cas.identity_by_external_id(external_id) is not None:
                raise errors.FieldError(
                    "externalId", f"duplicate value '{external_id}' in unique index on identities store", external_id
                )
            name = self._unique_name(self._format(ca, leaf, requested or identity_id, identity_id))
            self.identities.create_system(
                {
                    "id": identity_id,
                    "name": name,
                    "type_id": "Default",
                    "is_admin": False,
                    "role_attributes": list(ca.get("identity_roles") or []),
                    "external_id": external_id,
                }
            )
            if external_id is None:
                auth_id = self.authenticators.create_cert(identity_id, cert_pem(leaf), fp, issued_by_network=False)
                self.authenticators.touch(auth_id, ca_id=ca["id"])
        return EnrollResult({})

    @staticmethod
    def _format(ca: dict, leaf, requested: str, identity_id: str) -> str:
        values = {
            "caName": ca.get("name") or "",
            "caId": ca["id"],
            "commonName": common_name(leaf),
            "requestedName": str(requested),
            "identityId": identity_id,
        }
        text = ca.get("identity_name_format") or DEFAULT_NAME_FORMAT
        for symbol, value in values.items():
            text = text.replace(f"[{symbol}]", value)
        return text

    def _unique_name(self, base: str) -> str:
        """``base``, else ``base000001``, ``base000002``... (six digits, like the real one)."""
        name, counter = base, 0
        while self.identities.find_by_name(name) is not None:
            counter += 1
            if counter > MAX_NAME_SUFFIX:
                raise errors.FieldError("name", "no free identity name for this certificate", base)
            name = f"{base}{counter:06d}"
        return name
