"""External JWT test support: signing keys, tokens, and a JWKS endpoint on 127.0.0.1.

Independent of ``controller/``: keys and certificates come from cryptography,
tokens from PyJWT, the endpoint from ``http.server`` in a daemon thread.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID


class JwksServer:
    """Serves ``documents[path]`` as JSON and counts the requests per path."""

    def __init__(self):
        self.documents: dict[str, dict] = {}
        self.hits: Counter = Counter()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                server.hits[self.path] += 1
                document = server.documents.get(self.path)
                body = json.dumps(document).encode() if document is not None else b"{}"
                self.send_response(200 if document is not None else 404)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="jwks-server", daemon=True)

    def start(self) -> "JwksServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"

    def publish(self, path: str, *keys: "SigningKey") -> str:
        self.documents[path] = {"keys": [key.jwk() for key in keys]}
        return self.url(path)


class SigningKey:
    """A signing key with a kid: issues tokens, publishes its JWK or a certificate."""

    def __init__(self, kid: str, kind: str = "ec"):
        self.kid = kid
        self.key = rsa.generate_private_key(65537, 2048) if kind == "rsa" else ec.generate_private_key(ec.SECP256R1())
        self.alg = "RS256" if kind == "rsa" else "ES256"

    def jwk(self) -> dict:
        algorithm = jwt.algorithms.RSAAlgorithm if self.alg == "RS256" else jwt.algorithms.ECAlgorithm
        out = json.loads(algorithm.to_jwk(self.key.public_key()))
        out.update(kid=self.kid, use="sig", alg=self.alg)
        return out

    def token(self, claims: dict, *, kid: str | None = "", alg: str | None = None) -> str:
        headers = {} if kid is None else {"kid": self.kid if kid == "" else kid}
        return jwt.encode(claims, self.key, algorithm=alg or self.alg, headers=headers)

    def cert_pem(self, now, cn: str = "jwt-signer") -> str:
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(days=1))
            .not_valid_after(now + timedelta(days=365))
            .sign(self.key, hashes.SHA256())
        )
        return cert.public_bytes(serialization.Encoding.PEM).decode()


def claims(issuer: str, subject: str, clock, *, audience="ziti", lifetime: int = 300, **extra) -> dict:
    now = int(clock.now().timestamp())
    return {"iss": issuer, "sub": subject, "aud": audience, "iat": now, "exp": now + lifetime, **extra}


def signer_body(name: str, issuer: str, *, jwks: str | None = None, cert_pem: str | None = None, **fields) -> dict:
    body = {
        "name": name,
        "issuer": issuer,
        "audience": "ziti",
        "enabled": True,
        "externalAuthUrl": "https://idp.example/auth",
        "clientId": "ziti-client",
        "scopes": ["openid"],
        **fields,
    }
    if jwks:
        body["jwksEndpoint"] = jwks
    if cert_pem:
        body["certPem"] = cert_pem
    return body


def ext_jwt_login(ziti, token: str | None, *, api_name: str = "client", **headers):
    """``POST /authenticate?method=ext-jwt`` with ``Authorization: Bearer <token>``; the raw response."""
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    send = ziti.edge if api_name == "client" else ziti.mgmt
    return send("POST", "/authenticate", params={"method": "ext-jwt"}, json={}, headers=headers)
