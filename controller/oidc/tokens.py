"""Access, ID and refresh tokens: claims, lifetimes, signing with the server certificate's key.

Access and ID tokens are signed with the key of the controller's TLS server
certificate (RS256 or ES256/384/512), ``kid`` = the certificate's SHA-1
fingerprint, as enrollment JWTs are: routers and OIDC clients verify them by
the JWKS. Refresh tokens are only ever read back by this controller, so they
are HS256 JWTs under a secret derived from that same private key (HKDF), one
cheap MAC instead of a third public-key signature per code exchange; the real
controller signs them with the server key too (``docs/architecture.md``,
"OIDC tokens"). A refresh token signed with the server key (minted before this
change) is still accepted. Access and refresh tokens carry the session's custom
``z_*`` claims; a refresh copies them, so ``z_asid`` never changes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import timedelta
from typing import Callable

import jwt
import orjson
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

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
#: verified access tokens remembered (each SDK holds one, two around a refresh): past this the oldest goes
VERIFIED_CACHE = 32_768


def _cache_key(token: str) -> bytes:
    """The verified-token cache's key of ``token``: its SHA-256 (no other string has it)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


#: refresh tokens: a MAC under a secret derived from the server key (see ``refresh_secret``)
REFRESH_ALG = "HS256"
REFRESH_INFO = b"ziti-controller oidc refresh-token hs256 v1"
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
    for key in OMIT_WHEN_EMPTY:  # ``values`` is this call's own dict: dropped in place, not copied
        if key in values and not values[key]:
            del values[key]
    return values


_URLSAFE = bytes.maketrans(b"+/", b"-_")


def _b64(data: bytes) -> bytes:
    """Unpadded base64url (``base64.urlsafe_b64encode`` without its two Python frames: three per token)."""
    return binascii.b2a_base64(data, newline=False).translate(_URLSAFE).rstrip(b"=")


def refresh_secret(key) -> bytes:
    """The refresh tokens' HS256 secret: HKDF-SHA256 over the server key's private bytes.

    No new file to keep: it rotates with the server key, and only a holder of that key can make it.
    """
    der = key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=REFRESH_INFO).derive(der)


def _header_segment(alg: str, kid: str) -> bytes:
    """The encoded JOSE header and its dot, as PyJWT writes it (sorted keys, no spaces)."""
    return _b64(orjson.dumps({"alg": alg, "kid": kid, "typ": "JWT"}, option=orjson.OPT_SORT_KEYS)) + b"."


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
        #: the header segment every access and ID token starts with
        self._header = _header_segment(self.alg, self.kid)
        self._header_text = self._header.decode("ascii")
        self._raw_sign = raw_signer(self.key)
        #: refresh tokens: their own ``kid`` (not in the JWKS: nobody else checks them) and HS256 secret (a cluster
        #: member signs them with its key instead, see ``_signed``)
        self.refresh_kid = f"{self.kid}.refresh"
        self._refresh_secret = refresh_secret(self.key)
        #: HMAC-SHA256 keyed once; a token's MAC is a copy of it (no key setup or algorithm lookup per token)
        self._refresh_mac = hmac.new(self._refresh_secret, digestmod=hashlib.sha256)
        self._refresh_header = _header_segment(REFRESH_ALG, self.refresh_kid)
        self._refresh_header_text = self._refresh_header.decode("ascii")
        self._jwks: dict | None = None
        #: a cluster's other members' signing keys, ``{kid: (public key, alg)}`` (set by a cluster member): their
        #: access and ID tokens verify here and are in the JWKS (one key set for the cluster)
        self.peers: Callable[[], dict] | None = None
        #: SHA-256 of a token -> its claims, for signatures already verified, oldest first (bounded, see
        #: ``_remember``); the digest, not the token: 32 bytes instead of the JWT's 1-1.5 KB, on each live SDK
        self._verified: OrderedDict[bytes, dict] = OrderedDict()
        self._verified_lock = threading.Lock()
        self.verified_limit = VERIFIED_CACHE

    def now(self) -> int:
        return int(self.clock.now().timestamp())

    def sign(self, claims: dict) -> str:
        """An access or ID token: ``claims`` signed with the server key."""
        return self._signed(claims)[0]

    def _signed(self, claims: dict, *, refresh: bool = False) -> tuple[str, bytes | None]:
        """The JWT and its JSON payload (None when PyJWT had to encode it).

        A refresh token is MACed, except on a cluster member: there it is signed as an access token is, so the
        member an SDK reaches after a failover checks it with the issuer's public key.
        """
        mac = refresh and self.peers is None
        try:
            payload = orjson.dumps(claims) if mac or self._raw_sign is not None else None
        except TypeError:  # orjson.JSONEncodeError: an integer beyond 64 bits in copied client info
            payload = None
        if payload is None:
            if mac:
                headers = {"kid": self.refresh_kid, "typ": "JWT"}
                return jwt.encode(claims, self._refresh_secret, algorithm=REFRESH_ALG, headers=headers), None
            return jwt.encode(claims, self.key, algorithm=self.alg, headers={"kid": self.kid, "typ": "JWT"}), None
        if mac:
            signing_input = self._refresh_header + _b64(payload)
            signature = self._mac(signing_input)
        else:
            signing_input = self._header + _b64(payload)
            signature = self._raw_sign(signing_input)
        return (signing_input + b"." + _b64(signature)).decode("ascii"), payload

    def _mac(self, data: bytes) -> bytes:
        """The refresh tokens' HS256 MAC of ``data``."""
        mac = self._refresh_mac.copy()
        mac.update(data)
        return mac.digest()

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
        token, payload = self._signed(claims, refresh=kind == REFRESH)
        if kind == ACCESS and payload is not None:
            # The client presents it next: its signature is ours by construction, so it is not checked again
            # (a payload beyond orjson, see ``_signed``, is checked on first use instead). ``claims`` are what the
            # payload decodes to (JSON values only); nobody changes a token's claims once it is minted.
            self._remember(token, claims)
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
        if custom.get("z_asid"):  # the API session, as the real ID token carries it (``end_session`` revokes it)
            claims["z_asid"] = custom["z_asid"]
        if identity.get("external_id"):
            claims["z_eid"] = identity["external_id"]
        return self.sign(claims)

    def known_claims(self, token: str) -> dict | None:
        """The claims of a token whose signature already verified, else None (no parsing)."""
        return self._verified.get(_cache_key(token)) if isinstance(token, str) else None

    def looks_like_ours(self, token: str) -> bool:
        """Cheap pre-check: a JWT whose ``kid`` is this controller's."""
        if not isinstance(token, str) or not token.startswith("ey"):
            return False
        if token.startswith(self._header_text) or token.startswith(self._refresh_header_text):
            return True
        try:
            kid = jwt.get_unverified_header(token).get("kid")
        except jwt.PyJWTError:
            return False
        return kid in (self.kid, self.refresh_kid) or (self.peers is not None and kid in self.peers())

    def verify(self, token: str, kind: str) -> dict:
        """The claims of our token of ``kind``; ``TokenRejected`` when forged, of another kind or expired."""
        claims = self._verified.get(_cache_key(token)) if isinstance(token, str) else None
        if claims is None:
            if isinstance(token, str) and token.startswith(self._refresh_header_text):
                if kind != REFRESH:  # a MAC never stands for an access token
                    raise TokenRejected("invalid")
                claims = self._check_refresh_mac(token)
            else:
                claims = self._check_signature(token)
        if not isinstance(claims, dict) or claims.get("z_t") != kind or not isinstance(claims.get("sub"), str):
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
        key, alg = self.public_key, self.alg
        if self.peers is not None and not token.startswith(self._header_text):
            key, alg = self.peers().get(jwt.get_unverified_header(token).get("kid"), (key, alg))
        claims = verify_signature(token, key, [alg])
        self._remember(token, claims)
        return claims

    def _check_refresh_mac(self, token: str) -> dict:
        """The claims of a refresh token this controller MACed (not remembered: each is spent once)."""
        signing_input, _, signature = token.rpartition(".")
        if not token.isascii() or signing_input.count(".") != 1:
            raise TokenRejected("invalid")
        expected = _b64(self._mac(signing_input.encode("ascii")))
        if not hmac.compare_digest(expected, signature.encode("ascii")):
            raise TokenRejected("invalid")
        payload = signing_input.partition(".")[2]
        try:
            # json, not orjson: integers beyond 64 bits in copied client info stay exact
            return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        except (binascii.Error, ValueError):
            raise TokenRejected("invalid") from None

    def _remember(self, token: str, claims: dict) -> None:
        """Remember what verified: a bearer comes back on every request (times and revocations are still checked).

        Kept in insertion order, so the first entry is the oldest: expired ones leave from the front, and
        past ``verified_limit`` the oldest makes room (never the whole cache: the live tokens stay, and a
        fleet larger than the cache costs one signature check per token evicted, not one per request).
        """
        verified, now, key = self._verified, self.now(), _cache_key(token)
        with self._verified_lock:  # inserts only (a miss): hits read the dict without it
            if key in verified:
                return
            while verified:
                exp = next(iter(verified.values())).get("exp")
                if len(verified) < self.verified_limit and not (isinstance(exp, int) and exp <= now):
                    break
                verified.popitem(last=False)
            verified[key] = claims

    def jwks(self) -> dict:
        """The JWKS document of the signing key (``/oidc/keys``), built once."""
        if self._jwks is None:
            jwk = jwt.algorithms.get_default_algorithms()[self.alg].to_jwk(self.public_key, as_dict=True)
            self._jwks = {"keys": [{**jwk, "kid": self.kid, "use": "sig", "alg": self.alg}]}
        if self.peers is not None:
            algorithms = jwt.algorithms.get_default_algorithms()
            peers = [
                {**algorithms[alg].to_jwk(key, as_dict=True), "kid": kid, "use": "sig", "alg": alg}
                for kid, (key, alg) in sorted(self.peers().items())
            ]
            return {"keys": [*self._jwks["keys"], *peers]}
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
