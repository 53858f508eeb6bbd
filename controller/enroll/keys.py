"""The enrollment signing keys: ``GET /enroll/jwks`` and ``POST /enroll/challenge``.

The real controller specifies both but answers 501; here they work. The JWKS
lists the public key that signs enrollment JWTs (the TLS server certificate's
key, ``kid`` = SHA-1 fingerprint of that certificate, ``x5c`` its chain). The
challenge signs a client nonce with that key, JWS-style: the signature is the
base64url (unpadded) JWS signature over the UTF-8 nonce, so any JWS library can
verify it with the JWK.
"""

from __future__ import annotations

import base64
import hashlib
import uuid

from jwt import algorithms

from controller import errors
from controller.pki.certs import der


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _algorithm(alg: str):
    return algorithms.get_default_algorithms()[alg]


def jwks(pki) -> dict:
    """``{"keys": [jwk]}`` of the enrollment signing key(s); public parts only."""
    key, alg, kid = pki.jwt_signing_key()
    # APPSEC(jwks): to_jwk of the *public* key, so no private member can ever leak.
    jwk = _algorithm(alg).to_jwk(key.public_key(), as_dict=True)
    server = pki.server_cert
    jwk.update(
        {
            "kid": kid,
            "alg": alg,
            "use": "sig",
            "key_ops": ["verify"],
            "x5c": [base64.b64encode(der(c)).decode("ascii") for c in (server, pki.intermediate_cert)],
            "x5t": _b64url(hashlib.sha1(der(server)).digest()),
            "x5t#S256": _b64url(hashlib.sha256(der(server)).digest()),
        }
    )
    return {"keys": [jwk]}


def challenge(pki, body: dict) -> dict:
    """Sign ``nonce`` (a UUID) with the key ``keyId``: ``{signature, algorithm, kid, caPool}``."""
    nonce, key_id = body.get("nonce"), body.get("keyId")
    try:
        uuid.UUID(str(nonce))
    except ValueError:
        raise errors.FieldError("nonce", "nonce in body must be of type uuid", nonce) from None
    key, alg, kid = pki.jwt_signing_key()
    if key_id != kid:
        raise errors.FieldError("keyId", "keyId is not a key of the enrollment JWKS", key_id)
    signature = _algorithm(alg).sign(str(nonce).encode("utf-8"), key)
    return {"signature": _b64url(signature), "algorithm": alg, "kid": kid, "caPool": pki.ca_bundle_pem()}
