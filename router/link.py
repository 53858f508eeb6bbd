"""What the router needs from a controller: the narrow interface it defines.

The controller supplies an adapter (``controller/router_link.py``) in-process;
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


@dataclass(frozen=True)
class Caller:
    """The API session a channel's hello named, checked against its certificate."""

    api_session_id: str
    identity_id: str
    identity_name: str


@dataclass(frozen=True)
class Grant:
    """A Dial or Bind session the controller accepted for one service."""

    session_id: str
    service_id: str
    service_name: str
    encryption_required: bool


@dataclass(frozen=True)
class Terminator:
    """A binding the router asks the controller to record (``binding: edge``)."""

    terminator_id: str
    service_id: str
    identity_id: str
    cost: int = 0
    precedence: str = "default"
    instance_id: str = ""
    host_public_key: bytes | None = None


@dataclass(frozen=True)
class Credentials:
    """The router's id, name and TLS server certificate (chain and key as PEM).

    For links (``router/links.py``) also its client certificate and key, and the controller's own CA
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

    # -- links and circuits (router/links.py, router/edge.py). Plain JSON values in and out. ----------------
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

    def route(self, identity_id: str, service_id: str, instance_id: str) -> Mapping[str, Any]:
        """Where a dial of ``service_id`` arriving at this router goes.

        The controller picks a terminator by the service's ``terminatorStrategy`` among terminators on
        online routers it can reach (precedence required > default > failed, then cost), and the cheapest
        path of live links to it. Returns ``{"circuit_id", "service_id", "terminator_id", "router_id",
        "host_id", "path": [router ids, this router first], "links": [link ids between them]}``;
        ``LookupError`` with the text the dialer is told when there is no terminator.
        """

    def circuit_up(self, circuit: Mapping[str, Any]) -> "concurrent.futures.Future | None":
        """A circuit this router took the dial for is connected: ``{"circuit_id", "service_id", "identity_id",
        "host_id", "terminator_id", "path", "links"}`` (recorded and put on the timeline); quick. None once
        recorded, or a future done once the controller has it (the dialer is told it is connected then, so a
        listing right after a dial shows the circuit, as on the real controller)."""

    def circuit_down(self, circuit: Mapping[str, Any]) -> None:
        """That circuit ended: ``{"circuit_id", "bytes_from_dialer", "bytes_from_host", "reason"}``; quick."""
