"""Helpers shared by the test modules: setup steps return or raise; ``assert_error`` checks an error reply.

Everything goes through the HTTP API, ``harness.dataplane.flows`` and ``harness.client.pki`` (never ``controller.pki``).
Helpers only: fixtures live in the harness plugin (``ziti_*``) and ``tests/conftest.py`` on top
(``cert_api``/``cert_admin`` for clients able to present a certificate).
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
import time
from contextlib import contextmanager
from datetime import timedelta
from typing import Iterator
from urllib.parse import parse_qs, urlparse

from harness.client import data_of
from harness.client import pki as hp
from harness.dataplane.flows import TotpDevice, ca_verification_proof, submit_ott_csr
from harness.dataplane.flows import verify_ca as verify_ca_flow

CLIENT = "/edge/client/v1"
CONTROLLER_URL = "https://127.0.0.1:1280"
SDK_INFO = {"type": "ziti-sdk-c", "version": "1.18.0", "revision": "abc", "branch": "main"}
ENV_INFO = {"os": "linux", "osRelease": "6.1", "osVersion": "1", "arch": "x86_64", "hostname": "h", "domain": ""}


def ok(response):
    """The ``data`` of a 2xx reply; ApiError otherwise."""
    return data_of(response)


def new_identity(ziti_admin, name: str, enrollment: dict | None = None, **fields) -> str:
    body = {"name": name, "type": "User", "isAdmin": False, **fields}
    if enrollment is not None:
        body["enrollment"] = enrollment
    return ziti_admin.create("identities", body)


def pending(ziti_admin, identity_id: str, method: str) -> dict:
    """The identity's outstanding enrollment of ``method`` (``{id, jwt, token, expiresAt}``)."""
    return ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")["enrollment"][method]


def post_csr(
    ziti,
    token: str,
    csr_pem: str,
    *,
    content_type: str = "text/plain",
    accept: str = "application/json",
    path: str = CLIENT + "/enroll",
):
    return ziti.request(
        "POST",
        path,
        params={"method": "ott", "token": token},
        content=csr_pem.encode("ascii"),
        headers={"content-type": content_type, "accept": accept},
    )


def enroll_ott(ziti, token: str, subject: str = "client", *, key_type: str = "ec") -> hp.CertKey:
    """Enroll like the C SDK (the harness flow, text/plain CSR); return the issued chain with its key."""
    return submit_ott_csr(ziti, token, subject, CONTROLLER_URL, key_type=key_type).cert_key()


def enrolled(ziti_admin, ziti, name: str, **fields) -> tuple[str, hp.CertKey]:
    """A new identity enrolled by ott: ``(identity id, client cert)``."""
    identity_id = new_identity(ziti_admin, name, {"ott": True}, **fields)
    return identity_id, enroll_ott(ziti, pending(ziti_admin, identity_id, "ott")["token"], identity_id)


def cert_login(ziti, path: str = "/authenticate", **body):
    """``POST /authenticate?method=cert`` (the legacy root path by default); the raw response."""
    return ziti.request(
        "POST", path, params={"method": "cert"}, json={"sdkInfo": SDK_INFO, "envInfo": ENV_INFO, **body}
    )


def session_of(ziti, response):
    return ziti.with_token(ok(response)["token"])


def third_party(now=None, name: str = "Third Party") -> tuple[hp.CertKey, hp.CertKey]:
    """A third-party root and intermediate, dated around ``now`` (the controller clock)."""
    root = hp.make_root_ca(f"{name} Root", now=now)
    return root, hp.make_intermediate_ca(root, f"{name} Intermediate", now=now)


def create_ca(ziti_admin, name: str, root: hp.CertKey, **fields) -> str:
    body = {
        "name": name,
        "certPem": root.cert_pem,
        "isAutoCaEnrollmentEnabled": False,
        "isOttCaEnrollmentEnabled": False,
        "isAuthEnabled": False,
        "identityRoles": [],
        **fields,
    }
    return ziti_admin.create("cas", body)


def verify_ca(ziti_admin, ca_id: str, root: hp.CertKey, now=None):
    """Post the proof of possession (the harness's), returning the raw response."""
    proof = ca_verification_proof(ziti_admin, ca_id, root, now=now)
    return ziti_admin.mgmt(
        "POST", f"/cas/{ca_id}/verify", content=proof.encode("ascii"), headers={"content-type": "text/plain"}
    )


def verified_ca(ziti_admin, name: str, root: hp.CertKey, now=None, **fields) -> str:
    ca_id = create_ca(ziti_admin, name, root, **fields)
    verify_ca_flow(ziti_admin, ca_id, root, now=now)
    return ca_id


def auth_policy_body(
    name: str | None = None,
    *,
    cert_allowed: bool = True,
    allow_expired: bool = True,
    max_attempts: int = 0,
    lockout: int = 0,
) -> dict:
    """An auth-policy body allowing every primary method, no second factor (``name`` omitted when None)."""
    body = {
        "primary": {
            "cert": {"allowed": cert_allowed, "allowExpiredCerts": allow_expired},
            "extJwt": {"allowed": True, "allowedSigners": []},
            "updb": {
                "allowed": True,
                "minPasswordLength": 5,
                "requireMixedCase": False,
                "requireNumberChar": False,
                "requireSpecialChar": False,
                "maxAttempts": max_attempts,
                "lockoutDurationMinutes": lockout,
            },
        },
        "secondary": {"requireTotp": False, "requireExtJwtSigner": None},
    }
    return body if name is None else {"name": name, **body}


def policy(ziti_admin, name: str, *, cert_allowed: bool = True, allow_expired: bool = True) -> str:
    """Create an auth policy (see :func:`auth_policy_body`); return its id."""
    return ziti_admin.create(
        "auth-policies", auth_policy_body(name, cert_allowed=cert_allowed, allow_expired=allow_expired)
    )


# -- passwords and TOTP -------------------------------------------------------------

TOTP_QUERY = {
    "typeId": "MFA",
    "provider": "ziti",
    "format": "alphaNumeric",
    "httpMethod": "POST",
    "httpUrl": "./authenticate/mfa",
    "minLength": 4,
    "maxLength": 6,
    "scopes": None,
}


def login(ziti, username, password, api_name="management"):
    """``POST /authenticate?method=password`` on ``api_name``; the raw response."""
    send = ziti.mgmt if api_name == "management" else ziti.edge
    return send(
        "POST", "/authenticate", params={"method": "password"}, json={"username": username, "password": password}
    )


def secret_of(provisioning_url: str) -> str:
    return parse_qs(urlparse(provisioning_url).query)["secret"][0]


def code(secret: str, clock, steps: int = 0) -> str:
    """What an authenticator app shows ``steps`` 30-second steps from the controller clock (RFC 6238)."""
    return TotpDevice(secret, []).code(clock.now() + timedelta(seconds=30 * steps))


def start_enrollment(session) -> dict:
    session.edge_ok("POST", "/current-identity/mfa")
    return session.edge_ok("GET", "/current-identity/mfa")


def enroll_verified(session, clock) -> tuple[str, list[str]]:
    """Enroll and verify TOTP MFA; return ``(secret, recovery codes)``."""
    status = start_enrollment(session)
    secret = secret_of(status["provisioningUrl"])
    session.edge_ok("POST", "/current-identity/mfa/verify", json={"code": code(secret, clock)})
    return secret, status["recoveryCodes"]


# -- error replies ---------------------------------------------------------------------


def assert_error(response, status, code, field=None):
    """Check an error reply: status, envelope, ``code`` and ``cause.field``; return the error object."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    error = body["error"]
    assert error["code"] == code
    assert error["message"] and error["requestId"]
    assert body["meta"] == {"apiEnrollmentVersion": "0.0.1", "apiVersion": "0.0.1"}
    if "cause" in error:
        assert isinstance(error["cause"], dict)
    if field is not None:
        assert error["cause"]["field"] == field
    return error


class LogLines(logging.Handler):
    """One logger's warnings (they come from other threads); ``wait`` blocks until ``count`` have arrived."""

    def __init__(self, name: str):
        super().__init__(logging.WARNING)
        self.name, self.lines = name, []
        self._cond = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        with self._cond:
            self.lines.append(record.getMessage())
            self._cond.notify_all()

    def wait(self, count: int = 1, timeout: float = 20) -> list[str]:
        with self._cond:
            assert self._cond.wait_for(lambda: len(self.lines) >= count, timeout), f"{self.name} logged {self.lines}"
            return list(self.lines)


@contextmanager
def warnings_of(name: str) -> Iterator[LogLines]:
    """The warnings logger ``name`` emits while the block runs."""
    handler = LogLines(name)
    logger = logging.getLogger(name)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def recv_exactly(sock: socket.socket, size: int) -> bytes | None:
    """``size`` bytes from a raw (TLS) test socket, or None once the peer closed or reset it."""
    data = b""
    while len(data) < size:
        try:
            chunk = sock.recv(size - len(data))
        except (ConnectionError, ssl.SSLError):
            return None
        if not chunk:
            return None
        data += chunk
    return data


@contextmanager
def store_held(store, seconds: float) -> Iterator[list[float]]:
    """Another thread takes ``store``'s lock and holds it ``seconds``; inside, it is held. Yields the list the
    release time (``time.monotonic``) is put in; the holder has let go when this ends."""
    held, released = threading.Event(), []

    def hold() -> None:
        with store.lock:
            held.set()
            time.sleep(seconds)
            released.append(time.monotonic())

    holder = threading.Thread(target=hold, name="store-holder")
    holder.start()
    try:
        assert held.wait(10), "the holder never took the store's lock"
        yield released
    finally:
        holder.join(seconds + 10)
