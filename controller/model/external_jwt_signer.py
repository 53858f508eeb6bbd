"""External JWT signers: issuers whose JWTs authenticate identities (``method=ext-jwt``).

A signer holds either a ``certPem`` (its key, with ``kid`` defaulting to the
certificate's SHA-1 fingerprint) or a ``jwksEndpoint`` (keys fetched by kid),
never both. Issuers are unique: a token picks its signer by exact ``iss``.
"""

from __future__ import annotations

from urllib.parse import urlparse

from cryptography.x509.oid import NameOID

from controller.clock import rfc3339
from controller.entities import ENTITIES
from controller.errors import FieldError, ReferenceExists
from controller.model.base import Attr, Core, EntityManager, name_field, scalar
from controller.model.identity import IdentityManager
from controller.pki.certs import fingerprint, load_pem_cert
from controller.store.indexes import MultiIndex, UniqueIndex

TARGET_TOKENS = ("ACCESS", "ID")


class ExternalJwtSignerManager(EntityManager):
    declaration = ENTITIES["external_jwt_signers"]
    attrs = (
        Attr("name"),
        Attr("enabled", default=False),
        Attr("issuer"),
        Attr("audience"),
        Attr("certPem"),
        Attr("jwksEndpoint"),
        Attr("kid"),
        Attr("claimsProperty", default="sub"),
        Attr("useExternalId", default=False),
        Attr("externalAuthUrl"),
        Attr("clientId"),
        Attr("scopes", default=list),
        Attr("targetToken", default="ACCESS"),
        Attr("enrollToCertEnabled", default=False),
        Attr("enrollToTokenEnabled", default=False),
        Attr("enrollNameClaimsSelector", omit_none=True),
        Attr("enrollAttributeClaimsSelector", omit_none=True),
        Attr("enrollAuthPolicyId", omit_none=True),
    )
    filter_fields = (
        name_field(),
        scalar("issuer", "string"),
        scalar("enabled", "bool"),
        scalar("kid", "string"),
        scalar("audience", "string"),
        scalar("externalAuthUrl", "string"),
    )

    def __init__(self, core: Core, *, identities: IdentityManager):
        super().__init__(core)
        self.identities = identities
        self.by_issuer = UniqueIndex(self.store, self.table, lambda r: r.get("issuer"))
        self.by_external_id = UniqueIndex(self.store, "identities", lambda r: r.get("external_id"))
        self.policy_users = MultiIndex(self.store, "auth_policies", _signers_of_policy, many=True)

    # -- reads ------------------------------------------------------------------
    def find_by_issuer(self, issuer) -> dict | None:
        signer_id = self.by_issuer.get(issuer) if isinstance(issuer, str) else None
        return self.find(signer_id) if signer_id else None

    def enabled(self) -> list[dict]:
        return sorted((r for r in self.store.all(self.table) if r.get("enabled")), key=lambda r: r["name"])

    def identity_for(self, signer: dict, subject: str) -> dict | None:
        """The identity a token's claim names: by externalId or by id, as the signer says."""
        if signer.get("use_external_id"):
            identity_id = self.by_external_id.get(subject)
            return self.identities.find(identity_id) if identity_id else None
        return self.identities.find(subject)

    # -- writes -------------------------------------------------------------------
    # NOTE: switching between certPem and jwksEndpoint needs PUT: PATCH treats null as "unchanged".
    def prepare(self, record: dict, old: dict | None, body: dict) -> None:
        for key in ("cert_pem", "jwks_endpoint", "kid", "external_auth_url", "client_id", "audience"):
            if record.get(key) == "":
                record[key] = None
        if record.get("cert_pem") and record.get("jwks_endpoint"):
            raise FieldError("certPem", "only one of certPem or jwksEndpoint may be defined", None)
        if not record.get("cert_pem") and not record.get("jwks_endpoint"):
            raise FieldError("certPem", "either certPem or jwksEndpoint must be defined", None)
        self._prepare_cert(record, old)
        for key, wire in (("jwks_endpoint", "jwksEndpoint"), ("external_auth_url", "externalAuthUrl")):
            if record.get(key) and not _is_url(record[key]):
                raise FieldError(wire, f"{wire} must be an http or https URL", record[key])
        if not record.get("claims_property"):
            record["claims_property"] = "sub"
        record["scopes"] = record.get("scopes") or []
        holder = self.by_issuer.get(record.get("issuer"))
        if holder is not None and holder != record["id"]:
            raise FieldError(
                "issuer",
                f"duplicate value '{record['issuer']}' in unique index on externalJwtSigners store",
                record["issuer"],
            )

    def _prepare_cert(self, record: dict, old: dict | None) -> None:
        pem = record.get("cert_pem")
        if not pem:
            record.update(fingerprint=None, common_name=None, not_before=None, not_after=None)
            return
        cert = load_pem_cert(pem)
        record["fingerprint"] = fingerprint(cert)
        names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        record["common_name"] = str(names[0].value) if names else ""
        record["not_before"] = rfc3339(cert.not_valid_before_utc)
        record["not_after"] = rfc3339(cert.not_valid_after_utc)
        kid_was_defaulted = old is not None and old.get("kid") == old.get("fingerprint")
        if not record.get("kid") or (kid_was_defaulted and record.get("kid") == old.get("kid")):
            record["kid"] = record["fingerprint"]

    def before_delete(self, record: dict) -> None:
        users = sorted(self.policy_users.get(record["id"]))
        if users:
            raise ReferenceExists("authPolicyId", users, "the external JWT signer is used by authentication policies")


def _signers_of_policy(record: dict) -> list[str]:
    ids = list((record.get("primary") or {}).get("ext_jwt", {}).get("allowed_signers") or [])
    required = (record.get("secondary") or {}).get("require_ext_jwt_signer")
    if required:
        ids.append(required)
    return sorted(set(ids))


def _is_url(value: str) -> bool:
    parsed = urlparse(value)
    return parsed.scheme in ("http", "https") and bool(parsed.netloc)
