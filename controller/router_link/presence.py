"""A router's presence: online, offline, the reconcile at every (re)connect, and what it watches (pushes)."""

from __future__ import annotations

import logging

from controller.errors import ControllerError, ReplicaConflict
from controller.fabric.state import Link

log = logging.getLogger("controller.ctrl")
#: OIDC revocation records (``controller/oidc/revocations.py``) -> the ``revoked`` push's kind: an OIDC API
#: session (``z_asid``: its channels close), one token (``jti``), every token of an identity issued until now
OIDC_REVOCATIONS = {"API_SESSION": "apiSession", "JTI": "token", "IDENTITY": "identityTokens"}


class Presence:
    """Part of :class:`controller.router_link.RouterLink`: router presence and the controller's pushes."""

    def online(self, url: str, version_info: dict | None = None) -> None:
        self._drop_terminators()
        self.router_presence.online(self.router_id, url, version_info)
        self.emit("router", "online", router_id=self.router_id, url=url)

    def reconcile(
        self,
        url: str,
        link_url: str | None,
        terminators: list,
        links: list[dict],
        channels: list[tuple[str, str]],
        version_info: dict | None = None,
    ) -> dict:
        """A router (re)connected and reports its whole state: the controller takes what it lacks and answers what
        the router must drop. ``links``: ``{"link_id", "router_id" (the peer), "dialed"}``; ``channels``: the token
        and certificate fingerprint each open SDK channel presented (a refused one is answered by its index)."""
        drop_channels, identities = [], []
        for index, (token, client_fingerprint) in enumerate(channels):
            try:
                identities.append(self.hello(token, client_fingerprint)["identity_id"])
            except PermissionError:
                drop_channels.append(index)
        self.router_presence.offline(self.router_id)  # connection counts start over from what the router holds
        self.router_presence.online(self.router_id, url, version_info)
        for identity_id in identities:
            self.router_presence.connection_changed(identity_id, True, self.router_id)
        self.emit("router", "online", router_id=self.router_id, url=url)

        reported = {terminator.terminator_id: terminator for terminator in terminators}
        stale = [t["id"] for t in self.terminators.of_router(self.router_id) if t["id"] not in reported]
        for terminator_id in stale:
            try:
                self.terminators.delete_system(terminator_id)
            except ReplicaConflict:  # a cluster: another member deleted it meanwhile
                pass
        known = {t["id"] for t in self.terminators.of_router(self.router_id)}
        added, drop_terminators = 0, []
        for terminator_id, terminator in reported.items():
            if terminator_id in known:
                continue
            try:
                self.add_terminator(terminator)
                added += 1
            except ReplicaConflict:  # a cluster: the router's own add, through another member, came first
                pass
            except ControllerError:  # e.g. its service was deleted while the router was away
                drop_terminators.append(terminator_id)

        links_added, drop_links = 0, []
        for link in links:
            peer = self.routers.find(link["router_id"])
            if peer is None or not peer.get("is_verified") or peer.get("disabled"):
                drop_links.append(link["link_id"])
            elif self.fabric.link(link["link_id"]) is None:
                src, dst = (self.router_id, peer["id"]) if link["dialed"] else (peer["id"], self.router_id)
                record = Link(link["link_id"], src, dst, self._now())
                self.fabric.link_up(record)
                self._link_event("connected", record)
                links_added += 1
        if link_url:
            self.fabric.returned(self.router_id, link_url)
        summary = (
            f"{len(reported)} terminators ({added} added, {len(stale)} removed, {len(drop_terminators)} refused), "
            f"{len(links)} links ({links_added} added, {len(drop_links)} refused), "
            f"{len(channels)} SDK channels ({len(drop_channels)} refused)"
        )
        log.info(
            "ctrl: router %s (%s) %s reconciled: %s",
            self.name,
            self.router_id,
            (version_info or {}).get("version") or "?",
            summary,
        )
        return {
            "drop_terminators": drop_terminators,
            "drop_links": drop_links,
            "drop_channels": drop_channels,
            "summary": summary,
        }

    def watch_state(self, report, reconciled) -> None:
        """The embedded router never reconnects: nothing to report (see ``reconcile`` for routers that do)."""

    def watch_peers(self, returned) -> None:
        """Call ``returned({"router_id", "name", "url"})`` when another router's link listener is back after a
        reconnect, so this router dials it again."""

        def on_returned(router_id: str, url: str) -> None:
            if router_id != self.router_id:
                record = self.routers.find(router_id) or {}
                returned({"router_id": router_id, "name": record.get("name") or "", "url": url})

        self._unwatch.append(self.fabric.watch_returned(on_returned))

    def watch(self, revoked) -> None:
        """Deleted sessions and API sessions, from the event timeline (the store commit's listener)."""
        kinds = {"edge.sessions": "session", "edge.apiSessions": "apiSession"}

        def on_event(event: dict) -> None:
            if event.get("event_type") == "deleted" and event.get("namespace") in kinds:
                self._presented.pop(event["id"], None)
                revoked(kinds[event["namespace"]], event["id"])
            elif event.get("namespace") == "router" and event.get("event_type") == "offline":
                # a cluster member that lost only its own channel to a router does not tell the others' routers:
                # that router may still be up (their links to it find out by themselves if it is not)
                if event.get("router_id") != self.router_id and event.get("scope") != "member":
                    revoked("router", event.get("router_id"))
            elif event.get("namespace") == "entityChange" and event.get("entityType") == "revocations":
                record = event.get("finalState") or {}  # an OIDC revocation (logout, token, identity)
                kind = OIDC_REVOCATIONS.get(record.get("type"))
                if kind is not None and event.get("eventType") in ("created", "updated"):
                    revoked(kind, str(event.get("entityId")))

        self._unwatch.append(self.events.subscribe(on_event))

    def watch_oidc_keys(self, changed) -> None:
        """Call ``changed(jwks)`` now with the public keys OIDC access tokens are signed with (if OIDC is on), so
        a router verifies those tokens itself while this controller is away."""
        if self.oidc_jwks is not None:
            changed(self.oidc_jwks())

    def ctrl_endpoints(self) -> dict | None:
        """In a cluster, what the router is told of the members (``ctrlAddresses``: ``controllers`` [{``id``,
        ``address``}], ``index``, ``isLeader``); None for a single controller. Takes the store lock."""
        return self.cluster.ctrl_endpoints() if self.cluster is not None else None

    def watch_ctrl_endpoints(self, changed) -> None:
        """In a cluster, call ``changed()`` (a signal: quick, any thread, possibly raft's, so it must not take the
        store lock) whenever the members or this member's leadership change; then :meth:`ctrl_endpoints`."""
        if self.cluster is not None:
            self._unwatch.append(self.cluster.watch_ctrl_endpoints(changed))

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

    def disconnected(self) -> None:
        """The router's control channel to this controller ended without ``offline``. A single controller takes
        the router offline (:meth:`offline`). A cluster member only drops its own view of the router (presence,
        its links and circuits here): the router may still be connected to the other members, so its terminators,
        replicated writes every member sees, stay (as the real HA controllers keep them); its reconcile at the next
        connect, or ``online`` at its next start, settles them. Its ``router``/``offline`` event says ``scope:
        member``, and the routers connected here are not told to drop their links to it."""
        if self.cluster is None:
            return self.offline()
        self.unwatch()
        self.router_presence.offline(self.router_id)
        self.router_gone(self.router_id)
        self.emit("router", "offline", router_id=self.router_id, scope="member")

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
