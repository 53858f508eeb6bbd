"""Verification keys of external JWT signers: a certificate's key or a cached JWKS.

JWKS documents are fetched with httpx (5 s timeout, at most 5 redirects) on
first use and again on an unknown kid, but at most once a second per signer,
measured on the controller clock.
"""

from __future__ import annotations

import base64
import logging
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import httpx
import jwt
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa

from controller.pki.certs import load_pem_cert

log = logging.getLogger("controller.auth.ext_jwt")

FETCH_TIMEOUT = 5.0
MAX_REDIRECTS = 5
REFETCH_INTERVAL = timedelta(seconds=1)
MAX_JWKS_BYTES = 1024 * 1024


def algorithms_for(key) -> list[str]:
    """Asymmetric algorithms a key may verify (never HMAC: no algorithm confusion)."""
    if isinstance(key, rsa.RSAPublicKey):
        return ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512"]
    if isinstance(key, ec.EllipticCurvePublicKey):
        return {"secp256r1": ["ES256"], "secp384r1": ["ES384"], "secp521r1": ["ES512"]}.get(key.curve.name, [])
    if isinstance(key, (ed25519.Ed25519PublicKey, ed448.Ed448PublicKey)):
        return ["EdDSA"]
    return []


def parse_jwks(document) -> dict[str, object]:
    """kid -> public key for every usable key of a JWKS document (``x5c[0]`` wins)."""
    keys: dict[str, object] = {}
    entries = document.get("keys") if isinstance(document, dict) else None
    for jwk in entries if isinstance(entries, list) else []:
        if not isinstance(jwk, dict) or not isinstance(jwk.get("kid"), str) or jwk.get("use") == "enc":
            continue
        try:
            x5c = jwk.get("x5c")
            if isinstance(x5c, list) and x5c:
                key = x509.load_der_x509_certificate(base64.b64decode(x5c[0])).public_key()
            else:
                key = jwt.PyJWK(jwk).key
        except (ValueError, TypeError, jwt.PyJWTError):
            continue
        if algorithms_for(key):
            keys[jwk["kid"]] = key
    return keys


@dataclass
class _Entry:
    url: str
    keys: dict = field(default_factory=dict)
    fetched_at: datetime | None = None


class SignerKeys:
    """Finds the key for (signer, kid); owns the per-signer JWKS cache."""

    def __init__(self, clock, fetch=None):
        self.clock = clock
        self._fetch = fetch or fetch_jwks
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}

    def key_for(self, signer: dict, kid: str):
        """The public key for ``kid``, or None."""
        if signer.get("cert_pem"):
            if kid != signer.get("kid"):
                return None
            return load_pem_cert(signer["cert_pem"]).public_key()
        url = signer.get("jwks_endpoint")
        if not url:
            return None
        with self._lock:
            entry = self._entries.get(signer["id"])
            if entry is None or entry.url != url:
                entry = self._entries[signer["id"]] = _Entry(url)
            if kid not in entry.keys and self._may_fetch(entry):
                self._refresh(entry)
            return entry.keys.get(kid)

    def _may_fetch(self, entry: _Entry) -> bool:
        return entry.fetched_at is None or self.clock.now() - entry.fetched_at >= REFETCH_INTERVAL

    def _refresh(self, entry: _Entry) -> None:
        entry.fetched_at = self.clock.now()
        try:
            entry.keys = parse_jwks(self._fetch(entry.url))
        except (httpx.HTTPError, ValueError) as ex:
            # NOTE(ext-jwt): keep the keys we had; the URL is configuration, not a secret.
            log.warning("ext-jwt: cannot fetch JWKS from %s: %s", entry.url, type(ex).__name__)

    def forget(self, signer_id: str) -> None:
        with self._lock:
            self._entries.pop(signer_id, None)


def fetch_jwks(url: str):
    with httpx.Client(timeout=FETCH_TIMEOUT, follow_redirects=True, max_redirects=MAX_REDIRECTS) as http:
        response = http.get(url, headers={"accept": "application/json"})
        response.raise_for_status()
        if len(response.content) > MAX_JWKS_BYTES:
            raise ValueError("JWKS document too large")
        return response.json()
