"""Enrollment and network JWTs, signed with the key of the TLS server certificate.

``pki`` is the controller PKI (its ``jwt_signing_key``); ``base_url`` the
controller's public address, the tokens' issuer.
"""

from __future__ import annotations

import jwt

from controller.clock import parse_rfc3339


def _sign(pki, claims: dict) -> str:
    key, alg, kid = pki.jwt_signing_key()
    return jwt.encode(claims, key, algorithm=alg, headers={"kid": kid, "typ": "JWT"})


def sign_enrollment_jwt(pki, base_url: str, record: dict) -> str:
    """Claims as the real controller: iss, sub, aud [""], exp, jti (= token), em, ctrls; no iat/nbf."""
    claims = {
        "iss": base_url,
        "sub": (
            record.get("edge_router_id")
            or record.get("transit_router_id")
            or record.get("router_id")
            or record["identity_id"]
        ),
        "aud": [""],
        "exp": int(parse_rfc3339(record["expires_at"]).timestamp()),
        "jti": record["token"],
        "em": record["method"],
        "ctrls": None,
    }
    return _sign(pki, claims)


def sign_network_jwt(pki, base_url: str, jti: str) -> str:
    """The network JWT: ``em: network``, issuer with a trailing slash, no expiry."""
    base = base_url + "/"
    return _sign(pki, {"iss": base, "sub": base, "aud": ["openziti-enroller"], "jti": jti, "em": "network"})


def sign_ca_jwt(pki, base_url: str, ca_id: str) -> str:
    base = base_url + "/"
    return _sign(pki, {"iss": base, "sub": ca_id, "aud": ["openziti-enroller"], "jti": ca_id, "em": "ca"})
