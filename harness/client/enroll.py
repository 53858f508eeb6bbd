"""Enrollment as a real SDK does it, from the HTTP API and ``cryptography`` only.

Nothing here imports the controller: the CA bundle is read from
``/.well-known/est/cacerts``, JWTs are checked against the served TLS
certificate, and CSRs and keys come from :mod:`harness.client.pki`.
"""

from __future__ import annotations

import base64
import json
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

import jwt
from cryptography import x509
from cryptography.hazmat.primitives.serialization import load_pem_private_key, pkcs7

from harness.client import pki as hp

CLIENT_PREFIX = "/edge/client/v1"


def parse_cacerts(body: str | bytes) -> list[x509.Certificate]:
    """Certificates of an EST ``cacerts`` reply (base64 of a certs-only PKCS#7).

    Raises:
        ValueError: when the body is not base64 PKCS#7.
    """
    text = body.decode("ascii") if isinstance(body, bytes) else body
    return pkcs7.load_der_pkcs7_certificates(base64.b64decode("".join(text.split())))


def served_certificate(url: str) -> x509.Certificate:
    """The TLS server certificate served at ``url`` (not verified, like the SDK's first look)."""
    parts = urlsplit(url)
    pem = ssl.get_server_certificate((parts.hostname, parts.port or 443))
    return x509.load_pem_x509_certificate(pem.encode("ascii"))


def verify_enrollment_jwt(token: str, server_cert: x509.Certificate) -> dict:
    """Claims of an enrollment JWT after checking its signature with the server cert's key.

    Raises:
        jwt.InvalidTokenError: when the signature or the algorithm is wrong.
    """
    header = jwt.get_unverified_header(token)
    return jwt.decode(
        token, server_cert.public_key(), algorithms=[header["alg"]], options={"verify_aud": False, "verify_exp": False}
    )


@dataclass
class EnrolledIdentity:
    """What an SDK keeps after enrolling: the identity file's contents."""

    api_url: str
    cert_pem: str
    key_pem: str
    ca_pem: str

    def identity_file(self) -> dict:
        """The SDK identity file shape ``{ztAPI, ztAPIs, id{cert, key, ca}}``."""
        return {
            "ztAPI": self.api_url,
            "ztAPIs": [self.api_url],
            "id": {"cert": self.cert_pem, "key": self.key_pem, "ca": self.ca_pem},
        }

    def dumps(self) -> str:
        return json.dumps(self.identity_file(), indent=2)

    def cert_key(self) -> hp.CertKey:
        """The enrolled chain and key as a :class:`harness.client.pki.CertKey` for TLS clients."""
        chain = x509.load_pem_x509_certificates(self.cert_pem.encode("ascii"))
        key = load_pem_private_key(self.key_pem.encode("ascii"), password=None)
        return hp.CertKey(chain[0], key, chain[1:])


def ott_csr(subject_cn: str, controller_url: str, key_type: str = "ec"):
    """A CSR shaped like the C SDK's: O=OpenZiti, DC=<controller URL>, CN=<JWT sub>; returns ``(pem, key)``."""
    csr, key = hp.make_csr(subject_cn, o="OpenZiti", dc=controller_url, key_type=key_type)
    return hp.csr_pem(csr), key


def pem_bundle(certs) -> str:
    return hp.pem(*certs)


__all__ = ["EnrolledIdentity", "ott_csr", "parse_cacerts", "pem_bundle", "served_certificate", "verify_enrollment_jwt"]
