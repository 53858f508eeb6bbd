"""The router's one TLS policy, for its SDK listener, its link listener and dialer, and its control channel.

APPSEC(tls-policy): Mozilla "intermediate" without DHE (TLS 1.2 with ECDHE and AEAD suites only, and TLS 1.3),
as the controller's HTTPS listener (``controller.server.tls.TLS12_CIPHERS``; the router never imports the
controller, a test keeps the two strings equal).
"""

from __future__ import annotations

import ssl

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
