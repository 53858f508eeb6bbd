"""Enrollment and network JWTs, signed with the key of the TLS server certificate."""

from __future__ import annotations

from typing import Callable

import jwt

from controller.clock import parse_rfc3339
from controller.pki.ca import ControllerPKI


def _sign(pki: ControllerPKI, claims: dict) -> str:
    key, alg, kid = pki.jwt_signing_key()
    return jwt.encode(claims, key, algorithm=alg, headers={"kid": kid, "typ": "JWT"})


def sign_enrollment_jwt(
    pki: ControllerPKI, issuer: str, record: dict, ctrl_addresses: Callable[[], list[str]] | None = None
) -> str:
    """Claims as the real controller: iss, sub, aud [""], exp, jti (= token), em, ctrls; no iat/nbf.

    ``issuer`` is the controller's base URL; ``pki`` signs with the TLS server certificate's key.
    A router's JWT lists the control channel addresses in ``ctrls`` (``tls:host:port``, as a real
    controller lists its ctrl endpoints: this controller's, then a cluster's other members'), so the
    router knows where to connect.
    """
    router = record.get("edge_router_id") or record.get("transit_router_id") or record.get("router_id")
    claims = {
        "iss": issuer,
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
        "ctrls": (ctrl_addresses() or None) if router and ctrl_addresses is not None else None,
    }
    return _sign(pki, claims)


def sign_network_jwt(pki: ControllerPKI, issuer: str, jti: str) -> str:
    """The network JWT: ``em: network``, issuer with a trailing slash, no expiry."""
    base = issuer + "/"
    return _sign(pki, {"iss": base, "sub": base, "aud": ["openziti-enroller"], "jti": jti, "em": "network"})


def sign_ca_jwt(pki: ControllerPKI, issuer: str, ca_id: str) -> str:
    base = issuer + "/"
    return _sign(pki, {"iss": base, "sub": ca_id, "aud": ["openziti-enroller"], "jti": ca_id, "em": "ca"})
