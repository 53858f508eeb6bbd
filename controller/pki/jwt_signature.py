"""A JWT's signature checked alone: callers check times, audience and issuer themselves, with their own answers."""

from __future__ import annotations

import jwt

#: PyJWT checks nothing but the signature
SIGNATURE_ONLY = {
    "verify_exp": False,
    "verify_nbf": False,
    "verify_iat": False,
    "verify_aud": False,
    "verify_iss": False,
}


class TokenRejected(Exception):
    """A presented token failed; ``reason`` is ``missing``, ``expired`` or ``invalid``."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def verify_signature(token: str, key, algorithms: list[str]) -> dict:
    """The claims of ``token`` if ``key`` signed it with one of ``algorithms``; else ``TokenRejected("invalid")``."""
    try:
        return jwt.decode(token, key, algorithms=algorithms, options=SIGNATURE_ONLY)
    except jwt.PyJWTError:
        raise TokenRejected("invalid") from None
