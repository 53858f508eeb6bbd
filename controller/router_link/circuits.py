"""Links, circuits and routing: the fabric a router reports, and one request per dial (``dial``)."""

from __future__ import annotations

import protocol
from controller.fabric.routing import candidates, pick, router_costs, transit_allowed, usable
from controller.fabric.state import Circuit, Link


class Circuits:
    """Part of :class:`controller.router_link.RouterLink`: links, circuits and routing."""

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
            unreachable = [c for c in found if c.path is None and c.reason.startswith("no live link path")]
            if unreachable:  # terminators exist and are online, but no live link reaches them from here
                raise LookupError(f"service {service_id} has no path to a terminator{suffix}: {unreachable[0].reason}")
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

    def dial(
        self, caller, token: str, instance_id: str = "", dialer_key: bool = True, headers: dict | None = None
    ) -> dict:
        """One request per dial: validate the Dial session, pick the terminator and the path, record the circuit
        (in the fabric, with its ``created`` event), then answer. ``PermissionError`` (a refusal) or ``LookupError``
        (no terminator, no path) carry the text the dialer is told; a dial the router then cannot complete is
        reported with ``circuit_down``.

        Across links, with the dialer's Connect ``headers`` (what the host's Dial carries): the route is pushed
        first to every router of the path after this one (:meth:`_push_route`), so the last dials its host while
        this router is being answered; the answer says ``pushed``. Without them, or when one of those routers has
        no connection here (a cluster member it is not connected to), this router sends the route hop by hop."""
        grant, identity = self._session(caller, token, "Dial")
        if grant["encryption_required"] and not dialer_key:
            raise PermissionError("encryption required on service, initiator did not send public header")
        route = self.route(caller.identity_id, grant["service_id"], instance_id)
        # the dialer's name as the controller knows it (a channel the router verified alone knows only its id)
        name = identity.get("name") or ""
        # pushed first, so the last router dials its host while the circuit is recorded (before the answer)
        pushed = headers is not None and self._push_route(route, caller.identity_id, name, headers)
        self.circuit_up({**route, "identity_id": caller.identity_id})
        return {**grant, **route, "identity_name": name, "pushed": pushed}

    def _push_route(self, route: dict, identity_id: str, identity_name: str, headers: dict) -> bool:
        """Push ``route`` to each router of its path after the first; False (nothing pushed) for a one-hop path
        or when one of them cannot be reached from here."""
        deliver = [self.fabric.route_to(router_id) for router_id in route["path"][1:]]
        if not deliver or None in deliver:
            return False
        push = protocol.route_push(route, identity_id, identity_name, headers)
        for one in reversed(deliver):  # the last router first: it has the most to do (dial its host)
            one(push)
        return True

    def watch_routes(self, deliver) -> None:
        """From now on ``deliver(route)`` (the ``route`` push's arguments) pushes a route to this router."""
        self._unwatch.append(self.fabric.watch_routes(self.router_id, deliver))

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
