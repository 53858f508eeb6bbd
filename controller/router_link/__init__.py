"""The controller side of the router's :class:`router.controller_link.ControllerLink`.

Built only on domain functions (managers, the policy engine, the PKI, the
event timeline), each passed to the constructor; it never imports the router.
The composition root (``controller.app.router_link``) builds one and hands it
to ``router.EdgeRouter``. Answers are plain dicts with the fields of
the router's ``Caller``, ``Grant`` and ``Credentials``; refusals are
``PermissionError`` with the text the SDK is told.

Split by concern, one module each, composed here: ``sessions`` (hello, Dial/Bind sessions), ``terminators``,
``presence`` (online/offline, the reconcile at every reconnect, the watches behind the pushes) and
``circuits`` (links, routing, one request per dial).
"""

from __future__ import annotations

import ipaddress
import random
from datetime import datetime, timezone
from functools import partial
from typing import Callable, TypeVar

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from controller.fabric.state import Fabric
from controller.pki.certs import fingerprint
from controller.router_link.circuits import Circuits
from controller.router_link.presence import Presence
from controller.router_link.sessions import INVALID_SESSION, Sessions
from controller.router_link.terminators import Terminators
from controller.store.db import NotNow

__all__ = ["DEFAULT_NAME", "INVALID_SESSION", "RouterLink"]
DEFAULT_NAME = "quickstart-router"
T = TypeVar("T")


def _csr(common_name: str, key, names: tuple[str, ...] = ()) -> x509.CertificateSigningRequest:
    builder = x509.CertificateSigningRequestBuilder().subject_name(
        x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "OpenZiti"),
                x509.NameAttribute(NameOID.COMMON_NAME, common_name),
            ]
        )
    )
    if names:
        sans = []
        for name in names:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(name.strip("[]"))))
            except ValueError:
                sans.append(x509.DNSName(name))
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(key, hashes.SHA256())


def _key_pem(key) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode("ascii")


class RouterLink(Sessions, Terminators, Presence, Circuits):
    """One edge router's view of this controller."""

    def __init__(
        self,
        name: str = DEFAULT_NAME,
        hostnames: tuple[str, ...] = (),
        *,
        pki,
        store,
        events,
        engine,
        api_sessions,
        api_session_certificates,
        authenticators,
        sessions,
        services,
        routers,
        edge_routers,
        terminators,
        router_presence,
        instance_id: str,
        fabric: Fabric | None = None,
        clock=None,
        router_id: str = "",
        router_faults=None,
        oidc_jwks=None,
        cluster=None,
    ):
        self.name, self.pki, self.store, self.events, self.engine = name, pki, store, events, engine
        self.api_sessions, self.api_session_certificates = api_sessions, api_session_certificates
        self.authenticators, self.sessions, self.services = authenticators, sessions, services
        self.routers, self.edge_routers, self.terminators = routers, edge_routers, terminators
        self.router_presence, self.instance_id = router_presence, instance_id
        self.hostnames = tuple(dict.fromkeys(("localhost", "127.0.0.1", *hostnames)))
        self.fabric = fabric if fabric is not None else Fabric()
        self._now = clock.now if clock is not None else lambda: datetime.now(timezone.utc)
        #: the terminator strategies' dice (tests may seed it)
        self.random = random.Random()
        #: set for an enrolled router (its control channel named it); the embedded one learns it in credentials()
        self.router_id = router_id
        #: faults on this router's edge messages (``controller/simulation.py`` RouterFaults), if any
        self.router_faults = router_faults
        #: ``() -> JWKS`` of the OIDC access tokens' signing key (None without OIDC): pushed to routers
        self.oidc_jwks = oidc_jwks
        #: this member's cluster side (``controller.cluster.member.Cluster``), None for a single controller
        self.cluster = cluster
        self._unwatch: list = []
        #: the latest token (and certificate) each API session's hello or UpdateToken presented, so a
        #: dial re-checks the API session exactly as HTTP would: legacy or OIDC, expiry, revocation
        self._presented: dict[str, tuple[str, str]] = {}

    def now(self, call: Callable[[], T]) -> T:
        """``call()`` on this thread, which must not wait (the control channel's loop): ``NotNow`` when another
        thread holds the store, or when ``call`` would write (before it changed anything)."""
        with self.store.reading_now():
            return call()

    def dial_now(self, *args) -> dict | None:
        """:meth:`dial` on the calling thread (an in-process router's loop) when it waits for nothing; None when
        it would (the store busy, or a write due), and nothing was done."""
        try:
            return self.now(partial(self.dial, *args))
        except NotNow:
            return None

    def credentials(self) -> dict:
        """Create the edge router if missing, then issue and record its certificates (verified)."""
        router = self.edge_routers.find_by_name(self.name)
        if router is None:
            router_id = self.edge_routers.create({"name": self.name, "roleAttributes": ["public"]})
            router = self.edge_routers.get(router_id)
        self.router_id = router["id"]
        client_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
        client, server = self.pki.sign_router_csrs(
            _csr(self.router_id, client_key), _csr(self.router_id, server_key, self.hostnames)
        )
        with self.store.lock, self.store.transaction():
            for enrollment_id in list(self.routers.enrollment_ids.get(self.router_id)):
                self.store.delete("enrollments", enrollment_id)
            self.routers.mark_enrolled(
                self.router_id, self.pki.chain_pem(client), fingerprint(client), self.pki.chain_pem(server)
            )
        return {
            "router_id": self.router_id,
            "name": self.name,
            "cert_chain_pem": self.pki.chain_pem(server),
            "key_pem": _key_pem(server_key),
            "client_cert_chain_pem": self.pki.chain_pem(client),
            "client_key_pem": _key_pem(client_key),
            "ca_pem": self.pki.ca_bundle_pem(),
        }

    def trusted_cas(self) -> str:
        """The controller CAs plus verified third-party CAs enabled for authentication."""
        pems = [self.pki.ca_bundle_pem()]
        for record in self.store.values("cas"):
            if record.get("is_verified") and record.get("is_auth_enabled") and record.get("cert_pem"):
                pems.append(record["cert_pem"].strip() + "\n")
        return "".join(pems)
