"""OIDC access tokens verified by the router itself, while its controller is away.

The controller pushes the public keys its access tokens are signed with (``oidcKeys``) and every OIDC
revocation (``revoked``: ``apiSession`` for a ``z_asid``, ``token`` for a ``jti``, ``identityTokens`` for an
identity's tokens issued until then). :meth:`LocalTokens.caller` accepts an access token only when its signature
verifies with those keys, it is unexpired and unrevoked, and it is bound to the presented certificate
(``z_cfs`` names its fingerprint: without that binding only the controller can tell whose certificate it is).
"""

from __future__ import annotations

import threading
import time
from typing import Callable

import jwt

#: the ``z_t`` claim of an access token (``controller/oidc/tokens.py``)
ACCESS = "a"


class LocalTokens:
    def __init__(self, clock: Callable[[], float] = time.time):
        self.clock = clock
        self._keys: dict[str, jwt.PyJWK] = {}
        self._revoked: dict[str, set[str]] = {"apiSession": set(), "token": set()}
        self._identities: dict[str, float] = {}
        self._lock = threading.Lock()

    def set_keys(self, jwks: dict) -> None:
        keys = {}
        for entry in jwks.get("keys") or []:
            try:
                keys[str(entry.get("kid") or "")] = jwt.PyJWK(entry)
            except (jwt.PyJWTError, ValueError, TypeError, KeyError):
                continue  # a key this router cannot use: tokens signed with it wait for the controller
        with self._lock:
            self._keys = keys

    def revoke(self, kind: str, revoked_id: str) -> None:
        with self._lock:
            if kind == "identityTokens":
                self._identities[revoked_id] = self.clock()
            elif kind in self._revoked:
                self._revoked[kind].add(revoked_id)

    def caller(self, token: str, fingerprint: str) -> dict | None:
        """The caller the controller would answer for this access token and certificate, or None."""
        try:
            kid = jwt.get_unverified_header(token).get("kid") or ""
        except jwt.PyJWTError:
            return None
        with self._lock:
            key = self._keys.get(kid)
        if key is None:
            return None
        try:
            claims = jwt.decode(
                token,
                key.key,
                algorithms=[key.algorithm_name],
                options={"verify_aud": False, "require": ["exp", "sub"]},
            )
        except jwt.PyJWTError:
            return None
        api_session_id, identity_id = claims.get("z_asid"), claims.get("sub")
        if claims.get("z_t") != ACCESS or not isinstance(api_session_id, str) or not isinstance(identity_id, str):
            return None
        if fingerprint not in (claims.get("z_cfs") or []):
            return None
        with self._lock:
            if api_session_id in self._revoked["apiSession"] or claims.get("jti") in self._revoked["token"]:
                return None
            revoked_at = self._identities.get(identity_id)
        if revoked_at is not None and int(claims.get("iat") or 0) <= revoked_at:
            return None
        return {"api_session_id": api_session_id, "identity_id": identity_id, "identity_name": ""}
