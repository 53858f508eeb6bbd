"""The controller side of the router's :class:`router.link.ControllerLink`.

Built only on domain functions (managers, the policy engine, the PKI, the
event timeline), each passed to the constructor; it never imports the router.
The composition root (``controller.app.router_link``) builds one and hands it
to ``router.EdgeRouter``. Answers are plain dicts with the fields of
the router's ``Caller``, ``Grant`` and ``Credentials``; refusals are
``PermissionError`` with the text the SDK is told.
"""

from __future__ import annotations

import base64
import ipaddress
import random
from datetime import datetime, timezone

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from controller.errors import ControllerError
from controller.fabric.routing import candidates, pick, router_costs, transit_allowed, usable
from controller.fabric.state import Circuit, Fabric, Link
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


def _key_pem(key) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode("ascii")


class RouterLink:
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
        self._unwatch: list = []
        #: the latest token (and certificate) each API session's hello or UpdateToken presented, so a
        #: dial re-checks the API session exactly as HTTP would: legacy or OIDC, expiry, revocation
        self._presented: dict[str, tuple[str, str]] = {}

    # -- start -----------------------------------------------------------------------
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

    # -- checks -----------------------------------------------------------------------
    def hello(self, token: str, client_fingerprint: str) -> dict:
        try:
            session, identity = self.api_sessions.for_token(token, peer_fingerprint=client_fingerprint)
        except ControllerError:
            raise PermissionError("invalid api session") from None
        if self.api_sessions.auth_queries(session, identity):
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
        out = {r["fingerprint"] for r in self.authenticators.of_identity(identity["id"]) if r.get("fingerprint")}
        out.update(r["fingerprint"] for r in self.api_session_certificates.of_session(session["id"]))
        return out

    def session(self, caller, token: str, kind: str) -> dict:
        record = self.sessions.find(token)
        if record is None or record.get("token") != token or record["api_session_id"] != caller.api_session_id:
            raise PermissionError(INVALID_SESSION)
        token, fingerprint = self._presented.get(caller.api_session_id, ("", ""))
        try:
            api_session, identity = self.api_sessions.for_token(token, peer_fingerprint=fingerprint)
        except ControllerError:
            raise PermissionError(INVALID_SESSION) from None
        if api_session["id"] != caller.api_session_id or identity["id"] != caller.identity_id:
            raise PermissionError(INVALID_SESSION)
        if record["type"] != kind:
            raise PermissionError(
                "rejecting bind, invalid session type" if kind == "Bind" else "incorrect session type"
            )
        service = self.services.find(record["service_id"])
        if service is None:
            raise PermissionError("invalid service")
        if self.router_id not in self.engine.usable_edge_routers(caller.identity_id, service["id"]):
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
        self.terminators.create_system(
            terminator.terminator_id,
            terminator.service_id,
            self.router_id,
            cost=terminator.cost,
            precedence=terminator.precedence,
            instance_id=terminator.instance_id,
            host_id=terminator.identity_id,
            source_ctrl=self.instance_id,
            peer_data=peer,
        )

    def remove_terminator(self, terminator_id: str) -> None:
        self.terminators.delete_system(terminator_id)

    def online(self, url: str, version_info: dict | None = None) -> None:
        self._drop_terminators()
        self.router_presence.online(self.router_id, url, version_info)
        self.emit("router", "online", router_id=self.router_id, url=url)

    def watch(self, revoked) -> None:
        """Deleted sessions and API sessions, from the event timeline (the store commit's listener)."""
        kinds = {"edge.sessions": "session", "edge.apiSessions": "apiSession"}

        def on_event(event: dict) -> None:
            if event.get("event_type") == "deleted" and event.get("namespace") in kinds:
                self._presented.pop(event["id"], None)
                revoked(kinds[event["namespace"]], event["id"])
            elif event.get("namespace") == "router" and event.get("event_type") == "offline":
                if event.get("router_id") != self.router_id:
                    revoked("router", event.get("router_id"))

        self._unwatch.append(self.events.subscribe(on_event))

    def watch_trusted_cas(self, changed) -> None:
        """Call ``changed(pem)`` whenever the trusted CA bundle changes (a CA created, verified, disabled, deleted)."""
        state = {"pem": self.trusted_cas()}

        def on_event(event: dict) -> None:
            if event.get("namespace") == "entityChange" and event.get("entityType") == "cas":
                pem = self.trusted_cas()
                if pem != state["pem"]:
                    state["pem"] = pem
                    changed(pem)

        self._unwatch.append(self.events.subscribe(on_event))

    def watch_removed(self, removed) -> None:
        """Call ``removed(reason)`` once this router is deleted or disabled (its control channel then ends)."""

        def on_event(event: dict) -> None:
            if event.get("namespace") != "entityChange" or event.get("entityType") != "routers":
                return
            if event.get("entityId") != self.router_id:
                return
            if event.get("eventType") == "deleted":
                removed("the router was deleted")
            elif (event.get("finalState") or {}).get("disabled"):
                removed("the router was disabled")

        self._unwatch.append(self.events.subscribe(on_event))

    def watch_edge_faults(self, changed) -> None:
        """``changed(generation, faults)`` now and whenever this router's edge faults change (the whole set)."""
        if self.router_faults is not None:
            self._unwatch.append(self.router_faults.watch(self.router_id, changed))

    def edge_fault_hits(self, generation: int, hits: dict[str, int]) -> None:
        """The router applies the edge faults of ``generation``; ``hits`` counted since its last report."""
        if self.router_faults is not None:
            self.router_faults.report(self.router_id, generation, hits)

    def unwatch(self) -> None:
        """Stop every ``watch``; idempotent."""
        while self._unwatch:
            self._unwatch.pop()()

    def offline(self) -> None:
        self.unwatch()
        self.router_presence.offline(self.router_id)
        self._drop_terminators()
        self.router_gone(self.router_id)
        self.emit("router", "offline", router_id=self.router_id)

    def router_gone(self, router_id: str) -> None:
        """``router_id`` went: its links and the circuits through it leave the fabric (with their events)."""
        links, circuits = self.fabric.router_gone(router_id)
        for link in links:
            self._link_event("disconnected", link)
        for circuit in circuits:
            self.emit(
                "circuit",
                "deleted",
                circuit_id=circuit.id,
                service_id=circuit.service_id,
                router_id=circuit.path_routers[0] if circuit.path_routers else "",
                reason=f"router {router_id} went offline",
            )

    def _drop_terminators(self) -> None:
        """Terminators of this router left by an earlier run: their binders are gone."""
        router = self.routers.find(self.router_id)
        if router is not None:
            with self.store.lock, self.store.transaction():
                self.terminators.delete_for_router(router)

    def connection_changed(self, identity_id: str, connected: bool) -> None:
        self.router_presence.connection_changed(identity_id, connected, self.router_id)
        self.emit(
            "edge.router.connections",
            "connected" if connected else "disconnected",
            identity_id=identity_id,
            router_id=self.router_id,
        )

    def emit(self, namespace: str, event_type: str, **fields) -> None:
        self.events.emit(namespace, event_type, **fields)

    # -- links and circuits (see router/link.py for the contract) --------------------------------
    def link_listen(self, url: str) -> None:
        self.fabric.listen(self.router_id, url)

    def peers(self) -> list[dict]:
        out = []
        for router_id, url in sorted(self.fabric.listeners().items()):
            if router_id != self.router_id and self.router_presence.is_online(router_id):
                record = self.routers.find(router_id) or {}
                out.append({"router_id": router_id, "name": record.get("name") or "", "url": url})
        return out

    def link_peer(self, router_id: str, client_fingerprint: str) -> dict:
        record = self.routers.find(router_id) if router_id else None
        if record is None or not record.get("is_verified"):
            raise PermissionError(f"no enrolled router {router_id!r}")
        if not client_fingerprint or record.get("fingerprint") != client_fingerprint:
            raise PermissionError(f"the certificate is not the one enrolled for router {router_id}")
        if record.get("disabled"):
            raise PermissionError(f"router {router_id} is disabled")
        return {"router_id": router_id, "name": record.get("name") or ""}

    def link_up(self, link_id: str, dst_router_id: str) -> None:
        link = Link(link_id, self.router_id, dst_router_id, self._now())
        self.fabric.link_up(link)
        self._link_event("connected", link)

    def link_latency(self, link_id: str, latency_ns: int) -> None:
        self.fabric.update_link(link_id, src_latency_ns=int(latency_ns), dst_latency_ns=int(latency_ns))

    def link_down(self, link_id: str) -> None:
        link = self.fabric.link_down(link_id)
        if link is not None:
            self._link_event("disconnected", link)

    def _link_event(self, event_type: str, link: Link) -> None:
        self.emit(
            "link", event_type, link_id=link.id, src_router_id=link.src_router_id, dst_router_id=link.dst_router_id
        )

    def route(self, identity_id: str, service_id: str, instance_id: str = "") -> dict:
        service = self.services.find(service_id)
        if service is None:
            raise LookupError("invalid service")
        found = candidates(
            self.router_id,
            self.terminators.of_service(service_id),
            self.fabric.links(),
            online=self.router_presence.is_online,
            router_cost=router_costs(self.routers.find),
            transit=transit_allowed(self.routers.find),
            instance_id=instance_id,
        )
        chosen = pick(service.get("terminator_strategy") or "smartrouting", usable(found), self.random)
        if chosen is None:
            suffix = f" for instanceId {instance_id}" if instance_id else ""
            raise LookupError(f"service {service_id} has no terminators{suffix}")
        terminator, path = chosen
        return {
            "circuit_id": self._circuit_id(),
            "service_id": service_id,
            "terminator_id": terminator["id"],
            "router_id": terminator["router_id"],
            "host_id": terminator.get("host_id") or "",
            "path": list(path.routers),
            "links": list(path.links),
        }

    def _circuit_id(self) -> str:
        return "%032x" % self.random.getrandbits(128)

    def circuit_up(self, circuit: dict) -> None:
        record = Circuit(
            circuit["circuit_id"],
            circuit["service_id"],
            circuit.get("identity_id", ""),
            circuit.get("terminator_id", ""),
            self._now(),
            tuple(circuit.get("path") or (self.router_id,)),
            tuple(circuit.get("links") or ()),
        )
        self.fabric.circuit_up(record)
        self.emit(
            "circuit",
            "created",
            circuit_id=record.id,
            service_id=record.service_id,
            identity_id=record.client_id,
            host_id=circuit.get("host_id", ""),
            terminator_id=record.terminator_id,
            router_id=self.router_id,
            path={"nodes": list(record.path_routers), "links": list(record.path_links)},
        )

    def circuit_down(self, circuit: dict) -> None:
        record = self.fabric.circuit_down(circuit["circuit_id"])
        if record is None:
            return
        self.emit(
            "circuit",
            "deleted",
            circuit_id=record.id,
            service_id=record.service_id,
            router_id=self.router_id,
            path={"nodes": list(record.path_routers), "links": list(record.path_links)},
            bytes_from_dialer=int(circuit.get("bytes_from_dialer") or 0),
            bytes_from_host=int(circuit.get("bytes_from_host") or 0),
            reason=str(circuit.get("reason") or ""),
        )
