"""The router's one TLS policy, for its SDK listener, its link listener and dialer, and its control channel.

APPSEC(tls-policy): Mozilla "intermediate" without DHE (TLS 1.2 with ECDHE and AEAD suites only, and TLS 1.3),
as the controller's HTTPS listener (``controller.server.tls.TLS12_CIPHERS``; the router never imports the
controller, a test keeps the two strings equal).
"""

from __future__ import annotations

import re
import ssl
from _ssl import ENCODING_DER  # ssl.Certificate's format constant (not re-exported by ssl before 3.13)

_PEM = re.compile(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.S)

TLS12_CIPHERS = (
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
)


def new_context(purpose: int) -> ssl.SSLContext:
    """A context for ``ssl.PROTOCOL_TLS_SERVER`` or ``ssl.PROTOCOL_TLS_CLIENT`` with the policy applied."""
    context = ssl.SSLContext(purpose)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(TLS12_CIPHERS)
    return context


def bundle_ders(pem: str) -> frozenset[bytes]:
    """The certificates of a PEM bundle, as DER."""
    return frozenset(ssl.PEM_cert_to_DER_cert(block) for block in _PEM.findall(pem))


def issuers_of(ssl_object) -> list[bytes] | None:
    """The DER certificates above the peer's leaf in the chain its handshake verified (its CAs, up to the
    trust anchor), or None where this Python cannot tell (``get_verified_chain`` is public from 3.13, and
    present but private on 3.11 and 3.12)."""
    getter = getattr(ssl_object, "get_verified_chain", None) or getattr(
        getattr(ssl_object, "_sslobj", None), "get_verified_chain", None
    )
    if getter is None:
        return None
    chain = getter() or []
    return [entry if isinstance(entry, bytes) else entry.public_bytes(ENCODING_DER) for entry in chain[1:]]
