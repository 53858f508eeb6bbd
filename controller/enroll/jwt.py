"""Enrollment and network JWTs, signed with the key of the TLS server certificate."""

from __future__ import annotations

import jwt

from controller.clock import parse_rfc3339


def _sign(ctl, claims: dict) -> str:
    key, alg, kid = ctl.pki.jwt_signing_key()
    return jwt.encode(claims, key, algorithm=alg, headers={"kid": kid, "typ": "JWT"})


def sign_enrollment_jwt(ctl, record: dict) -> str:
    """Claims as the real controller: iss, sub, aud [""], exp, jti (= token), em, ctrls; no iat/nbf."""
    claims = {
        "iss": ctl.config.base_url,
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
    return _sign(ctl, claims)


def sign_network_jwt(ctl) -> str:
    """The network JWT: ``em: network``, issuer with a trailing slash, no expiry."""
    base = ctl.config.base_url + "/"
    return _sign(ctl, {"iss": base, "sub": base, "aud": ["openziti-enroller"], "jti": ctl.ids.uuid(), "em": "network"})


def sign_ca_jwt(ctl, ca_id: str) -> str:
    base = ctl.config.base_url + "/"
    return _sign(ctl, {"iss": base, "sub": ca_id, "aud": ["openziti-enroller"], "jti": ca_id, "em": "ca"})
