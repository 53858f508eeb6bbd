"""The controller side of the router's :class:`router.link.ControllerLink`.

Built only on domain functions (managers, the policy engine, the PKI, the
event timeline); it never imports the router. The composition root hands an
instance to ``router.EdgeRouter``. Answers are plain dicts with the fields of
the router's ``Caller``, ``Grant`` and ``Credentials``; refusals are
``PermissionError`` with the text the SDK is told.
"""

from __future__ import annotations

import base64
import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from controller.errors import ControllerError
from controller.pki.certs import fingerprint

DEFAULT_NAME = "quickstart-router"
INVALID_SESSION = "Invalid Session"


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


class RouterLink:
    """One edge router's view of this controller."""

    def __init__(self, ctl, name: str = DEFAULT_NAME, hostnames: tuple[str, ...] = ()):
        self.ctl, self.name = ctl, name
        self.hostnames = tuple(dict.fromkeys(("localhost", "127.0.0.1", *hostnames)))
        self.router_id = ""
        self._unwatch = None
        #: the latest token (and certificate) each API session's hello or UpdateToken presented, so a
        #: dial re-checks the API session exactly as HTTP would: legacy or OIDC, expiry, revocation
        self._presented: dict[str, tuple[str, str]] = {}

    # -- start -----------------------------------------------------------------------
    def credentials(self) -> dict:
        """Create the edge router if missing, then issue and record its certificates (verified)."""
        ctl = self.ctl
        router = ctl.edge_routers.find_by_name(self.name)
        if router is None:
            router_id = ctl.edge_routers.create({"name": self.name, "roleAttributes": ["public"]})
            router = ctl.edge_routers.get(router_id)
        self.router_id = router["id"]
        client_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
        client, server = ctl.pki.sign_router_csrs(
            _csr(self.router_id, client_key), _csr(self.router_id, server_key, self.hostnames)
        )
        with ctl.store.lock, ctl.store.transaction():
            for enrollment_id in list(ctl.routers.enrollment_ids.get(self.router_id)):
                ctl.store.delete("enrollments", enrollment_id)
            ctl.routers.mark_enrolled(
                self.router_id, ctl.pki.chain_pem(client), fingerprint(client), ctl.pki.chain_pem(server)
            )
        key_pem = server_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode("ascii")
        return {
            "router_id": self.router_id,
            "name": self.name,
            "cert_chain_pem": ctl.pki.chain_pem(server),
            "key_pem": key_pem,
        }

    def trusted_cas(self) -> str:
        """The controller CAs plus verified third-party CAs enabled for authentication."""
        pems = [self.ctl.pki.ca_bundle_pem()]
        for record in self.ctl.store.values("cas"):
            if record.get("is_verified") and record.get("is_auth_enabled") and record.get("cert_pem"):
                pems.append(record["cert_pem"].strip() + "\n")
        return "".join(pems)

    # -- checks -----------------------------------------------------------------------
    def hello(self, token: str, client_fingerprint: str) -> dict:
        ctl = self.ctl
        try:
            session, identity = ctl.api_sessions.for_token(token, peer_fingerprint=client_fingerprint)
        except ControllerError:
            raise PermissionError("invalid api session") from None
        if ctl.api_sessions.auth_queries(session, identity):
            raise PermissionError("api session has unanswered authentication queries")
        if client_fingerprint not in self._fingerprints(session, identity):
            raise PermissionError("client certificate does not belong to the api session")
        self._presented[session["id"]] = (token, client_fingerprint)
        return {
            "api_session_id": session["id"],
            "identity_id": identity["id"],
            "identity_name": identity.get("name") or "",
        }

    def _fingerprints(self, session: dict, identity: dict) -> set[str]:
        ctl, out = self.ctl, set()
        out.update(r["fingerprint"] for r in ctl.authenticators.of_identity(identity["id"]) if r.get("fingerprint"))
        out.update(r["fingerprint"] for r in ctl.api_session_certificates.of_session(session["id"]))
        return out

    def session(self, caller, token: str, kind: str) -> dict:
        ctl = self.ctl
        record = ctl.sessions.find(token)
        if record is None or record.get("token") != token or record["api_session_id"] != caller.api_session_id:
            raise PermissionError(INVALID_SESSION)
        token, fingerprint = self._presented.get(caller.api_session_id, ("", ""))
        try:
            api_session, identity = ctl.api_sessions.for_token(token, peer_fingerprint=fingerprint)
        except ControllerError:
            raise PermissionError(INVALID_SESSION) from None
        if api_session["id"] != caller.api_session_id or identity["id"] != caller.identity_id:
            raise PermissionError(INVALID_SESSION)
        if record["type"] != kind:
            raise PermissionError(
                "rejecting bind, invalid session type" if kind == "Bind" else "incorrect session type"
            )
        service = ctl.services.find(record["service_id"])
        if service is None:
            raise PermissionError("invalid service")
        if self.router_id not in ctl.network.engine.usable_edge_routers(caller.identity_id, service["id"]):
            raise PermissionError("invalid edge router for session")
        return {
            "session_id": record["id"],
            "service_id": service["id"],
            "service_name": service["name"],
            "encryption_required": bool(service.get("encryption_required")),
        }

    # -- terminators, presence, events ----------------------------------------------------
    def add_terminator(self, terminator) -> None:
        peer = {"1003": base64.b64encode(terminator.host_public_key).decode()} if terminator.host_public_key else {}
        self.ctl.terminators.create_system(
            terminator.terminator_id,
            terminator.service_id,
            self.router_id,
            cost=terminator.cost,
            precedence=terminator.precedence,
            instance_id=terminator.instance_id,
            host_id=terminator.identity_id,
            source_ctrl=self.ctl.instance_id,
            peer_data=peer,
        )

    def remove_terminator(self, terminator_id: str) -> None:
        self.ctl.terminators.delete_system(terminator_id)

    def online(self, url: str) -> None:
        self._drop_terminators()
        self.ctl.router_presence.online(self.router_id, url)
        self.emit("router", "online", router_id=self.router_id, url=url)

    def watch(self, revoked) -> None:
        """Deleted sessions and API sessions, from the event timeline (the store commit's listener)."""
        kinds = {"edge.sessions": "session", "edge.apiSessions": "apiSession"}

        def on_event(event: dict) -> None:
            if event.get("event_type") == "deleted" and event.get("namespace") in kinds:
                self._presented.pop(event["id"], None)
                revoked(kinds[event["namespace"]], event["id"])

        self._unwatch = self.ctl.events.subscribe(on_event)

    def offline(self) -> None:
        if self._unwatch is not None:
            self._unwatch()
        self.ctl.router_presence.offline(self.router_id)
        self._drop_terminators()
        self.emit("router", "offline", router_id=self.router_id)

    def _drop_terminators(self) -> None:
        """Terminators of this router left by an earlier run: their binders are gone."""
        router = self.ctl.routers.find(self.router_id)
        if router is not None:
            with self.ctl.store.lock, self.ctl.store.transaction():
                self.ctl.terminators.delete_for_router(router)

    def connection_changed(self, identity_id: str, connected: bool) -> None:
        self.ctl.router_presence.connection_changed(identity_id, connected)
        self.emit(
            "edge.router.connections",
            "connected" if connected else "disconnected",
            identity_id=identity_id,
            router_id=self.router_id,
        )

    def emit(self, namespace: str, event_type: str, **fields) -> None:
        self.ctl.events.emit(namespace, event_type, **fields)
