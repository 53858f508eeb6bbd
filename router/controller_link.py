"""What the router needs from a controller: the narrow interface it defines.

The controller supplies an adapter (``controller/router_link/``) in-process;
a router running as its own process uses :class:`router.control.RemoteControllerLink`,
which speaks the same interface over the control channel (``docs/control-channel.md``).
The router never reaches further. The adapter answers with plain dicts carrying the
fields of :class:`Caller`, :class:`Grant` or :class:`Credentials` (so it needs
nothing from this package); a refusal is a ``PermissionError`` whose text is
what the SDK is told (``Invalid Session`` makes SDKs refresh their session).
"""

from __future__ import annotations

import concurrent.futures  # noqa: F401  (named in an annotation)
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol

from protocol import Caller, Terminator

__all__ = ["Caller", "ControllerLink", "Credentials", "Grant", "Terminator", "Watchers"]


@dataclass(frozen=True)
class Grant:
    """A Dial or Bind session the controller accepted for one service."""

    session_id: str
    service_id: str
    service_name: str
    encryption_required: bool


@dataclass(frozen=True)
class Credentials:
    """The router's id, name and TLS server certificate (chain and key as PEM).

    For links (``router/peer_links.py``) also its client certificate and key, and the controller's own CA
    bundle (the only trust root for links); without them the router opens no link listener.
    """

    router_id: str
    name: str
    cert_chain_pem: str
    key_pem: str
    client_cert_chain_pem: str = ""
    client_key_pem: str = ""
    ca_pem: str = ""


class ControllerLink(Protocol):
    """The controller as the router sees it; every call is synchronous and quick."""

    def credentials(self) -> Mapping[str, Any]:
        """The router entity (created and verified if needed) and its server certificate."""

    def trusted_cas(self) -> str:
        """PEM bundle of the CAs client certificates must chain to."""

    def hello(self, token: str, fingerprint: str) -> Mapping[str, Any]:
        """Validate an API session token and the SHA-1 fingerprint of the client leaf."""

    def session(self, caller: Caller, token: str, kind: str) -> Mapping[str, Any]:
        """Validate a Dial or Bind session token of ``caller`` for this router."""

    def add_terminator(self, terminator: Terminator) -> None:
        """Record a terminator of this router."""

    def remove_terminator(self, terminator_id: str) -> None:
        """Forget a terminator (gone already is fine)."""

    def online(self, url: str, version_info: Mapping[str, str] | None = None) -> None:
        """The router listens at ``url`` (``tls://host:port``) and runs the build ``version_info`` names
        (``router.version``); stale terminators go."""

    def offline(self) -> None:
        """The router stopped."""

    def watch(self, revoked: Callable[[str, str], None]) -> None:
        """From now on call ``revoked(kind, id)`` when one goes; quick, any thread.

        ``kind`` is ``session`` or ``apiSession`` (its bindings or channels end), or ``router``: that router
        went offline, so this router's links to it close at once.
        """

    def watch_trusted_cas(self, changed: Callable[[str], None]) -> None:
        """From now on call ``changed(pem)`` with the new bundle when the trusted CAs change; quick, any thread."""

    def watch_peers(self, returned: Callable[[Mapping[str, Any]], None]) -> None:
        """From now on call ``returned({"router_id", "name", "url"})`` when another router's link listener is back
        after a reconnect (this router dials it again if no link to it is up); quick, any thread."""

    def watch_routes(self, routed: Callable[[Mapping[str, Any]], None]) -> None:
        """From now on call ``routed(route)`` with the ``route`` push's arguments (``protocol.ROUTE``) when a dial
        entering another router crosses this one: dial onwards (the host here, or wait for the next router) and
        tell the previous router over the link; quick, any thread."""

    def watch_state(
        self, report: Callable[[], "concurrent.futures.Future"], reconciled: Callable[[Mapping[str, Any]], None]
    ) -> None:
        """At every reconnect of the control channel send ``report()``'s result (the router's whole state:
        ``{"terminators": [Terminator], "links": [{"link_id", "router_id", "dialed"}], "channels": [(token,
        fingerprint)]}``) and hand the controller's answer (``drop_terminators``, ``drop_links``, ``drop_channels``:
        indexes into ``channels``) to ``reconciled``. An in-process controller never reconnects: a no-op there."""

    def watch_edge_faults(self, changed: Callable[[int, list[Mapping[str, Any]]], None]) -> None:
        """Call ``changed(generation, faults)`` now and whenever this router's edge faults change, with the whole
        set; quick, any thread. Each fault: ``{"id", "direction": "fromSdk"|"toSdk"|"both", "contentTypes":
        [ints, empty: all], "drop", "latencyMs"}``. The controller times them; the router applies them
        (``router/faults.py``) and acknowledges the generation with :meth:`edge_fault_hits`."""

    def edge_fault_hits(self, generation: int, hits: Mapping[str, int]) -> None:
        """The router applies the faults of ``generation``; ``hits``: messages each fault touched since the last
        report (``{fault id: count}``); quick."""

    def connection_changed(self, identity_id: str, connected: bool) -> None:
        """An identity's channel to this router opened or closed."""

    def emit(self, namespace: str, event_type: str, **fields) -> None:
        """Put an event on the controller's timeline."""

    # -- links and circuits (router/peer_links.py, router/edge.py). Plain JSON values in and out. ----------------
    def link_listen(self, url: str) -> None:
        """This router accepts links at ``url`` (``tls://host:port``); peers learn it from :meth:`peers`."""

    def peers(self) -> list[Mapping[str, Any]]:
        """Other online routers that accept links: ``[{"router_id", "name", "url"}]``."""

    def link_peer(self, router_id: str, fingerprint: str) -> Mapping[str, Any]:
        """Is ``fingerprint`` (SHA-1 of a link client's leaf) the certificate enrolled for ``router_id``?

        Returns ``{"router_id", "name"}``; ``PermissionError`` with the reason when it is not.
        """

    def link_up(self, link_id: str, dst_router_id: str) -> None:
        """This router dialed ``dst_router_id`` and the link ``link_id`` works."""

    def link_latency(self, link_id: str, latency_ns: int) -> None:
        """The link's measured round trip (its path cost follows it)."""

    def link_down(self, link_id: str) -> None:
        """The link closed (either end may say so; gone already is fine)."""

    def dial(
        self, caller: Caller, token: str, instance_id: str, dialer_key: bool, headers: Mapping[str, str] | None = None
    ) -> Mapping[str, Any]:
        """One request per dial: the controller validates the Dial session ``token`` of ``caller``, picks the
        terminator by the service's ``terminatorStrategy`` among terminators on online routers it can reach
        (precedence required > default > failed, then cost) and the cheapest path of live links to it, records
        the circuit, then answers ``{**Grant fields, "circuit_id", "terminator_id", "router_id", "host_id", "path":
        [router ids, this router first], "links": [link ids between them], "identity_name": the dialer's name}``.
        ``PermissionError`` (refused) or ``LookupError`` (no terminator, or no path to one) with the text the dialer
        is told. ``dialer_key``: the dialer sent a public key (a service requiring encryption refuses a dial without
        one). A dial this router then cannot complete is reported with :meth:`circuit_down`.

        ``headers``: the dialer's Connect headers the host's Dial carries (``protocol.encode_headers``). With them,
        a route across links is pushed to the routers after this one first (:meth:`watch_routes`) and the answer
        says ``"pushed": true``: the next router tells this one over the link (LinkDialed) once its host (or the
        router after it) accepted. Otherwise this router sends the route on (LinkRoute).

        A link whose control channel lives in the router's event loop (``router.control``, ``router.members``) also
        offers ``dial_async``, the same call awaited in that loop: a dial then passes no worker thread. The
        controller's own adapter (in-process) offers ``dial_now``, the same call answered on the calling thread
        when it waits for nothing (else None, and ``dial`` goes to a worker).
        """

    def circuit_down(self, circuit: Mapping[str, Any]) -> None:
        """That circuit ended, or its dial failed: ``{"circuit_id", "bytes_from_dialer", "bytes_from_host",
        "reason"}``; quick."""


class Watchers:
    """What a controller-link implementation calls back when the controller pushes something: the setters of
    :class:`ControllerLink` that only keep the callback (each implementation calls them as its pushes arrive)."""

    _revoked: Callable[[str, str], None] | None = None
    _cas_changed: Callable[[str], None] | None = None
    _peer_returned: Callable[[dict], None] | None = None
    _report: Callable[[], "concurrent.futures.Future"] | None = None
    _reconciled: Callable[[dict], None] | None = None
    _routed: Callable[[dict], None] | None = None

    def watch(self, revoked: Callable[[str, str], None]) -> None:
        self._revoked = revoked

    def watch_trusted_cas(self, changed: Callable[[str], None]) -> None:
        self._cas_changed = changed

    def watch_peers(self, returned: Callable[[dict], None]) -> None:
        self._peer_returned = returned

    def watch_routes(self, routed: Callable[[dict], None]) -> None:
        self._routed = routed

    def watch_state(
        self, report: Callable[[], "concurrent.futures.Future"], reconciled: Callable[[dict], None]
    ) -> None:
        self._report, self._reconciled = report, reconciled
