"""API session certificates on the wire."""

from __future__ import annotations

from controller.api.mappers.entity import links, render


def certificate_created_view(record: dict, *, api_session_certificates, pki) -> dict:
    """The 201 body of ``createCurrentApiSessionCertificate``: the certificate and the CA bundle."""
    return {
        "_links": links(api_session_certificates.collection, record["id"]),
        "id": record["id"],
        "certificate": record["certificate"],
        "cas": pki.ca_bundle_pem(),
    }


def certificate_view(record: dict, *, api_session_certificates) -> dict:
    out = render(api_session_certificates, record)
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
