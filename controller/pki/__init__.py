"""The controller PKI: its CAs and TLS cert, CSR signing, chain checks (no HTTP)."""

from controller.pki.ca import ControllerPKI, PKIError
from controller.pki.certs import (
    cert_pem,
    certs_pem,
    fingerprint,
    has_client_auth,
    is_ca,
    is_expired,
    load_der_cert,
    load_pem_cert,
    load_pem_chain,
    verify_chain,
)
from controller.pki.csr import parse_csr

__all__ = [
    "ControllerPKI",
    "PKIError",
    "cert_pem",
    "certs_pem",
    "fingerprint",
    "has_client_auth",
    "is_ca",
    "is_expired",
    "load_der_cert",
    "load_pem_cert",
    "load_pem_chain",
    "parse_csr",
    "verify_chain",
]
