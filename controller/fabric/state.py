"""Links and circuits as routers report them; never stored (a restart starts with none, as the real one).

Records are plain frozen dataclasses with domain (snake_case) names; the fabric API's mappers render
them in the real ``/fabric/v1`` shapes. All methods are thread-safe and quick.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field, replace
from datetime import datetime

log = logging.getLogger("controller.fabric")


@dataclass(frozen=True)
class Link:
    """A link one router dialed to another (``src`` dialed ``dst``)."""

    id: str
    src_router_id: str
    dst_router_id: str
    created_at: datetime
    protocol: str = "tls"
    static_cost: int = 1
    src_latency_ns: int = 0
    dst_latency_ns: int = 0
    state: str = "Connected"
    down: bool = False
    iteration: int = 1

    @property
    def cost(self) -> int:
        """The static cost plus the measured round trip in milliseconds, as the real path cost."""
        return self.static_cost + (self.src_latency_ns + self.dst_latency_ns) // 2_000_000

    def touches(self, router_id: str) -> bool:
        return router_id in (self.src_router_id, self.dst_router_id)


@dataclass(frozen=True)
class Circuit:
    """A dial's path: the routers it crosses (dialer's first) and the links between them."""

    id: str
    service_id: str
    client_id: str
    terminator_id: str
    created_at: datetime
    path_routers: tuple[str, ...] = ()
    path_links: tuple[str, ...] = ()
    tags: dict = field(default_factory=dict)


class Fabric:
    """Every live link and circuit, by id."""

    def __init__(self):
        self._lock = threading.Lock()
        self._links: dict[str, Link] = {}
        self._circuits: dict[str, Circuit] = {}
        #: router id -> the URL its link listener advertised (``tls://host:port``)
        self._listeners: dict[str, str] = {}
        #: ``returned(router_id, url)`` callbacks: a router's link listener is back after a reconnect
        self._returned: list = []
        #: router id -> ``deliver(route)``: how a route is pushed to that router (its control channel here)
        self._route_to: dict[str, object] = {}

    # -- link listeners -------------------------------------------------------------------
    def listen(self, router_id: str, url: str) -> None:
        with self._lock:
            self._listeners[router_id] = url

    def listeners(self) -> dict[str, str]:
        with self._lock:
            return dict(self._listeners)

    def watch_returned(self, returned) -> "callable":
        """Call ``returned(router_id, url)`` whenever a router's link listener comes back (:meth:`returned`), so its
        peers dial it again; returns the unwatch function."""
        with self._lock:
            self._returned.append(returned)

        def unwatch() -> None:
            with self._lock:
                if returned in self._returned:
                    self._returned.remove(returned)

        return unwatch

    def returned(self, router_id: str, url: str) -> None:
        """``router_id`` reconnected and listens for links at ``url`` again: its peers are told."""
        self.listen(router_id, url)
        with self._lock:
            watchers = list(self._returned)
        for watcher in watchers:
            try:
                watcher(router_id, url)
            except Exception:  # noqa: BLE001 - one router's push failing must not fail another's reconcile
                log.exception("fabric: telling a router that %s is back failed", router_id)

    # -- route pushes ---------------------------------------------------------------------
    def watch_routes(self, router_id: str, deliver) -> "callable":
        """``deliver(route)`` pushes a route to ``router_id`` (its newest connection here replaces the older);
        returns the unwatch function (which leaves a newer connection's in place)."""
        with self._lock:
            self._route_to[router_id] = deliver

        def unwatch() -> None:
            with self._lock:
                if self._route_to.get(router_id) is deliver:
                    del self._route_to[router_id]

        return unwatch

    def route_to(self, router_id: str):
        """How to push a route to ``router_id``, or None when it has no connection here."""
        return self._route_to.get(router_id)

    # -- links --------------------------------------------------------------------------
    def link_up(self, link: Link) -> None:
        with self._lock:
            self._links[link.id] = link

    def link_down(self, link_id: str) -> Link | None:
        with self._lock:
            return self._links.pop(link_id, None)

    def update_link(self, link_id: str, **changes) -> None:
        with self._lock:
            if link_id in self._links:
                self._links[link_id] = replace(self._links[link_id], **changes)

    def links(self) -> list[Link]:
        with self._lock:
            return list(self._links.values())

    def link(self, link_id: str) -> Link | None:
        return self._links.get(link_id)

    def links_of(self, router_id: str) -> list[Link]:
        with self._lock:
            return [link for link in self._links.values() if link.touches(router_id)]

    # -- circuits -----------------------------------------------------------------------
    def circuit_up(self, circuit: Circuit) -> None:
        with self._lock:
            self._circuits[circuit.id] = circuit

    def circuit_down(self, circuit_id: str) -> Circuit | None:
        with self._lock:
            return self._circuits.pop(circuit_id, None)

    def circuits(self) -> list[Circuit]:
        with self._lock:
            return list(self._circuits.values())

    def circuit(self, circuit_id: str) -> Circuit | None:
        return self._circuits.get(circuit_id)

    # -- a router goes away ----------------------------------------------------------------
    def router_gone(self, router_id: str) -> tuple[list[Link], list[Circuit]]:
        """Drop the links and circuits through ``router_id``; return what was dropped."""
        with self._lock:
            self._listeners.pop(router_id, None)
            links = [link for link in self._links.values() if link.touches(router_id)]
            circuits = [c for c in self._circuits.values() if router_id in c.path_routers]
            for link in links:
                del self._links[link.id]
            for circuit in circuits:
                del self._circuits[circuit.id]
        return links, circuits
