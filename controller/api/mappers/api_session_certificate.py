"""API session certificates on the wire."""

from __future__ import annotations

from controller.api.mappers.entity import links, render


def created_view(ctl, record: dict) -> dict:
    """The 201 body of ``createCurrentApiSessionCertificate``: the certificate and the CA bundle."""
    return {
        "_links": links(ctl.api_session_certificates.collection, record["id"]),
        "id": record["id"],
        "certificate": record["certificate"],
        "cas": ctl.pki.ca_bundle_pem(),
    }


def certificate_view(ctl, record: dict) -> dict:
    out = render(ctl.api_session_certificates, record)
    out.update(
        {
            "subject": record["subject"],
            "fingerprint": record["fingerprint"],
            "validFrom": record["valid_from"],
            "validTo": record["valid_to"],
            "certificate": record["certificate"],
        }
    )
    return out
