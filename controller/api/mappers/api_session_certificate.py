"""API session certificates on the wire."""

from __future__ import annotations

from controller.model.views import links


def created_view(ctl, record: dict) -> dict:
    """The 201 body of ``createCurrentApiSessionCertificate``: the certificate and the CA bundle."""
    return {
        "_links": links(ctl.api_session_certificates.collection, record["id"]),
        "id": record["id"],
        "certificate": record["certificate"],
        "cas": ctl.pki.ca_bundle_pem(),
    }
