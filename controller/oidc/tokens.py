"""Access, ID and refresh tokens: claims, lifetimes, signing with the server certificate's key.

Every token is signed with the key of the controller's TLS server certificate
(RS256 or ES256/384/512), ``kid`` = the certificate's SHA-1 fingerprint, as
enrollment JWTs are. Access and refresh tokens carry the session's custom
``z_*`` claims; a refresh copies them, so ``z_asid`` never changes.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from datetime import timedelta

import jwt
import orjson
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from controller.pki.jwt_signature import TokenRejected, verify_signature

ACCESS, REFRESH = "a", "r"
#: the registered public clients: the C SDK's and early HA SDKs' (sdk-golang)
CLIENTS = ("openziti", "native")
SCOPES = ("openid", "offline_access")
#: claims a refresh or an exchange copies from the subject token
CUSTOM = (
    "amr",
    "auth_time",
    "client_id",
    "scopes",
    "z_asid",
    "z_aid",
    "z_ct",
    "z_ia",
    "z_eid",
    "z_cfs",
    "z_acf",
    "z_sdk",
    "z_env",
    "z_ra",
    "z_ice",
    "z_cer",
    "z_ckrr",
    "z_iccc",
    "z_cae",
    "z_authid",
)
VERIFIED_CACHE = 4096
OMIT_WHEN_EMPTY = ("z_aid", "z_ct", "z_ia", "z_eid", "z_cae", "z_authid", "z_acf")


@dataclass(frozen=True)
class Lifetimes:
    access: timedelta = timedelta(minutes=30)
    refresh: timedelta = timedelta(hours=24)
    id: timedelta = timedelta(minutes=30)

    @classmethod
    def from_seconds(cls, access: int, refresh: int, id_token: int) -> "Lifetimes":
        access = max(60, int(access))
        # NOTE: like the real controller, a refresh token outlives the access token by at least a minute.
        refresh = max(int(refresh), access + 60)
        return cls(timedelta(seconds=access), timedelta(seconds=refresh), timedelta(seconds=max(60, int(id_token))))


def session_claims(**values) -> dict:
    """The custom claims of a session, dropping the ones the real controller omits when empty."""
    return {k: v for k, v in values.items() if not (k in OMIT_WHEN_EMPTY and not v)}


def _b64(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def raw_signer(key):
    """``bytes -> JWS signature bytes`` for ``key`` (RS256, ES256/384/512 as raw ``r||s``, EdDSA), or None."""
    if isinstance(key, rsa.RSAPrivateKey):
        pad, digest = padding.PKCS1v15(), hashes.SHA256()
        return lambda data: key.sign(data, pad, digest)
    if isinstance(key, ec.EllipticCurvePrivateKey):
        size = (key.curve.key_size + 7) // 8
        algorithm = ec.ECDSA({384: hashes.SHA384(), 521: hashes.SHA512()}.get(key.curve.key_size, hashes.SHA256()))

        def sign_ec(data: bytes) -> bytes:
            r, s = decode_dss_signature(key.sign(data, algorithm))
            return r.to_bytes(size, "big") + s.to_bytes(size, "big")

        return sign_ec
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return key.sign
    return None


class TokenSigner:
    """Signs and checks the controller's JWTs with the TLS server certificate's key.

    What does not change per token is built once: the key objects, the encoded
    JOSE header (``alg``, ``kid``, ``typ``) and the JWKS; a token is then one
    compact JSON encoding and one signature.
    """

    def __init__(self, pki, clock, ids, lifetimes: Lifetimes):
        self.clock, self.ids, self.lifetimes = clock, ids, lifetimes
        self.key, self.alg, self.kid = pki.jwt_signing_key()
        self.public_key = self.key.public_key()
        #: the header segment every token starts with (PyJWT's encoding: sorted keys, no spaces)
        header = {"alg": self.alg, "kid": self.kid, "typ": "JWT"}
        self._header = _b64(orjson.dumps(header, option=orjson.OPT_SORT_KEYS)) + b"."
        self._header_text = self._header.decode("ascii")
        self._raw_sign = raw_signer(self.key)
        self._jwks: dict | None = None
        #: token -> claims of signatures already verified (bounded)
        self._verified: dict[str, dict] = {}

    def now(self) -> int:
        return int(self.clock.now().timestamp())

    def sign(self, claims: dict) -> str:
        try:
            payload = orjson.dumps(claims) if self._raw_sign is not None else None
        except TypeError:  # orjson.JSONEncodeError: an integer beyond 64 bits in copied client info
            payload = None
        if payload is None:
            return jwt.encode(claims, self.key, algorithm=self.alg, headers={"kid": self.kid, "typ": "JWT"})
        signing_input = self._header + _b64(payload)
        return (signing_input + b"." + _b64(self._raw_sign(signing_input))).decode("ascii")

    def mint(self, kind: str, issuer: str, subject: str, custom: dict, *, jti: str | None = None) -> tuple[str, dict]:
        """A new access or refresh token with ``custom`` claims; returns the JWT and its claims."""
        now = self.now()
        life = self.lifetimes.access if kind == ACCESS else self.lifetimes.refresh
        claims = {
            **custom,
            "iss": issuer,
            "sub": subject,
            "aud": [custom["client_id"]],
            "exp": now + int(life.total_seconds()),
            "iat": now,
            "nbf": now,
            "jti": jti or self.ids.uuid(),
            "z_t": kind,
        }
        token = self.sign(claims)
        if kind == ACCESS:
            # The client presents it next: its signature is ours by construction, so it is not checked again.
            try:
                self._remember(token, orjson.loads(orjson.dumps(claims)))
            except TypeError:  # beyond orjson (see ``sign``): checked on first use instead
                pass
        return token, claims

    def mint_id_token(self, issuer: str, identity: dict, client_id: str, custom: dict, nonce: str | None) -> str:
        now = self.now()
        claims = {
            "iss": issuer,
            "sub": identity["id"],
            "aud": [client_id],
            "exp": now + int(self.lifetimes.id.total_seconds()),
            "iat": now,
            "auth_time": custom.get("auth_time", now),
            "amr": custom.get("amr") or [],
            "azp": client_id,
            "client_id": client_id,
            "name": identity.get("name"),
            "z_ia": bool(identity.get("is_admin")),
        }
        if nonce:
            claims["nonce"] = nonce
        if identity.get("external_id"):
            claims["z_eid"] = identity["external_id"]
        return self.sign(claims)

    def known_claims(self, token: str) -> dict | None:
        """The claims of a token whose signature already verified, else None (no parsing)."""
        return self._verified.get(token) if isinstance(token, str) else None

    def looks_like_ours(self, token: str) -> bool:
        """Cheap pre-check: a JWT whose ``kid`` is this controller's."""
        if not isinstance(token, str) or not token.startswith("ey"):
            return False
        if token.startswith(self._header_text):
            return True
        try:
            return jwt.get_unverified_header(token).get("kid") == self.kid
        except jwt.PyJWTError:
            return False

    def verify(self, token: str, kind: str) -> dict:
        """The claims of our token of ``kind``; ``TokenRejected`` when forged, of another kind or expired."""
        claims = self._verified.get(token) if isinstance(token, str) else None
        if claims is None:
            claims = self._check_signature(token)
        if claims.get("z_t") != kind or not isinstance(claims.get("sub"), str):
            raise TokenRejected("invalid")
        exp = claims.get("exp")
        if isinstance(exp, bool) or not isinstance(exp, int):
            raise TokenRejected("invalid")
        if self.now() >= exp:
            raise TokenRejected("expired")
        return claims

    def _check_signature(self, token: str) -> dict:
        if not self.looks_like_ours(token):
            raise TokenRejected("invalid")
        claims = verify_signature(token, self.public_key, [self.alg])
        self._remember(token, claims)
        return claims

    def _remember(self, token: str, claims: dict) -> None:
        # A bearer comes back on every request: remember what verified (times and revocations are still checked).
        if len(self._verified) >= VERIFIED_CACHE:
            self._verified.clear()
        self._verified[token] = claims

    def jwks(self) -> dict:
        """The JWKS document of the signing key (``/oidc/keys``), built once."""
        if self._jwks is None:
            jwk = jwt.algorithms.get_default_algorithms()[self.alg].to_jwk(self.public_key, as_dict=True)
            self._jwks = {"keys": [{**jwk, "kid": self.kid, "use": "sig", "alg": self.alg}]}
        return self._jwks


def unverified_claims(token: str) -> dict | None:
    try:
        return jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return None


def s256(verifier: str) -> str:
    """The PKCE S256 challenge of ``verifier``."""
    digest = hashlib.sha256(verifier.encode("ascii", errors="replace")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
