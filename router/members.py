"""``ControllerMembers``: the router's :class:`~router.controller_link.ControllerLink` over a control channel to
each member of a controller cluster (one channel for a single controller, as before).

As the real router does: the controller a router starts with tells it every member's control channel address
(the ``ctrlAddresses`` push, the real ``UpdateCtrlAddresses``), at connect and whenever the members or that
member's leadership change; the router keeps the list in its data folder (``endpoints.json``, the real
router's endpoints file, read instead of the enrolled address at the next start) and holds a channel to every
member (``router.control.RemoteControllerLink`` each, reconnecting on its own). A newer list replaces the
older one (by raft index); a list from a member that does not lead only adds members, as the real router
treats it. Every channel lives in one event loop on one thread (:attr:`ControllerMembers.loop`), which the
router's edge runs in too (``router/server.py``): a push is handled in the loop it arrives in.

Where each call goes:

* pushes come from any member (revocations, trusted CAs, peers, OIDC keys: each member sends its own);
* requests go to one member that answers: the leader when connected, else the member that answered last,
  else any; a member that cannot be reached is skipped for the next. Terminator writes are store writes,
  replicated through raft whichever member takes them; a dial's circuit is the answering member's own
  (member-local, as the fabric state is), so its ``circuitDown`` goes back to that member;
* an SDK's hello (and UpdateToken) is answered by one member and told to the others too, since each member
  checks a dial or bind against the token the SDK's channel presented last;
* what each member keeps for itself about this router goes to every connected member: its presence (a
  member that gets a connection marks the router online; ``online`` goes to one, which drops the router's
  stale terminators, and every other member gets the router's whole state as a ``reconcile``), its link
  listener and links, its SDK connections, its events.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Mapping

from protocol import Caller, Terminator, dial_args
from router.channel import loop_on_thread, stop_loop_thread
from router.control import AcceptedHellos, ControlError, RemoteControllerLink, refusal
from router.controller_link import Watchers
from router.local_tokens import LocalTokens

log = logging.getLogger("router.members")
#: the member list's file in the router's data folder
ENDPOINTS_FILE = "endpoints.json"
#: circuits whose answering member is remembered (for their ``circuitDown``)
MAX_CIRCUITS = 100_000
#: seconds in which a peer's return told by another member is not news
PEER_REPEAT = 2.0


def load_endpoints(data: Path) -> list[str]:
    """The member addresses the router kept (``endpoints.json``), or [] when there is none (or it is unreadable)."""
    try:
        content = json.loads((data / ENDPOINTS_FILE).read_text())
    except (OSError, ValueError):
        return []
    endpoints = content.get("endpoints") if isinstance(content, dict) else None
    return [e for e in endpoints if isinstance(e, str)] if isinstance(endpoints, list) else []


class ControllerMembers(Watchers):
    """Control channels to ``addresses`` (and to the members they tell), as one ``ControllerLink``."""

    def __init__(
        self,
        addresses: list[str],
        *,
        cert_pem: str,
        key_pem: str,
        server_cert_pem: str,
        ca_pem: str,
        data: Path | None = None,
        request_timeout: float = 10.0,
        local=None,
    ):
        """``local``: for a router embedded in a cluster member, that member's own in-process link, shaped as a
        member's channel (``address``, ``connected``, ``_call``, ``_notify``, the ``watch_*`` calls,
        ``members_changed``): always connected, asked first, and the source of the router's credentials."""
        if not addresses and local is None:
            raise ValueError("no controller address")
        self._pems = {"cert_pem": cert_pem, "key_pem": key_pem, "server_cert_pem": server_cert_pem, "ca_pem": ca_pem}
        self.data, self.request_timeout = data, request_timeout
        self._addresses = list(dict.fromkeys(addresses))
        self.links: dict[str, RemoteControllerLink] = {}
        self._lock = threading.RLock()
        self._closing = False
        #: the raft index of the member list in force (0: none told yet), the leader's and the last answer's address
        self._index = 0
        self._leader: str | None = None
        self._last: str | None = None
        self._circuits: OrderedDict[str, str] = OrderedDict()
        #: when each peer's return was last handed on (``peerOnline`` comes from every member)
        self._peers_told: dict[tuple, float] = {}
        #: held while a terminator is written through one member and while the state is reconciled with another
        self._state_lock = threading.Lock()
        #: shared by every member's channel: a hello accepted by any member is answered while none is reachable
        self.accepted = AcceptedHellos()
        self.local_tokens = LocalTokens()
        self._faults_changed: Callable[[int, list], None] | None = None
        self._faults: tuple[int, list] = (0, [])
        self._faults_from: str | None = None
        self._online: tuple[str, dict] | None = None
        self._link_url: str | None = None
        self._terminators: dict[str, Terminator] = {}
        #: the one event loop of every member's channel (and of the router's edge), on its own thread, from the first
        #: channel on
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._local = local
        if local is not None:
            self._addresses = list(dict.fromkeys([local.address, *self._addresses]))
            self.links[local.address] = local  # first: its member list may come at once
            self._wire(local)
            self._last = local.address

    # -- lifecycle ----------------------------------------------------------------------
    @property
    def address(self) -> str:
        return ", ".join(self._addresses)

    def connect(self, timeout: float = 10.0) -> "ControllerMembers":
        """Open a channel to the first member that answers (``ControlError`` with the first address's reason when
        none does); every other member is then dialed in the background, and kept dialing."""
        failures: list[ControlError] = []
        for address in list(self._addresses):
            link = self._new_link(address)
            with self._lock:  # before it connects: its first push (the member list) comes at once
                self.links[address] = link
            try:
                link.connect(timeout)
            except ControlError as ex:
                with self._lock:
                    self.links.pop(address, None)
                failures.append(ex)
                continue
            with self._lock:
                self._last = address
                addresses = list(self._addresses)
            for other in addresses:
                if other != address:
                    self._add(other)
            return self
        raise failures[0]

    def close(self) -> None:
        with self._lock:
            self._closing = True
            links = list(self.links.values())
            self.links.clear()
        closers = [threading.Thread(target=link.close, daemon=True) for link in links]
        for closer in closers:
            closer.start()
        for closer in closers:
            closer.join(10)
        stop_loop_thread(self.loop, self._thread)  # what the channels left (requests on their way out) ends first

    def _new_link(self, address: str) -> RemoteControllerLink:
        with self._lock:
            if self.loop is None:
                self.loop, self._thread = loop_on_thread("router-loop")
        link = RemoteControllerLink(address, request_timeout=self.request_timeout, loop=self.loop, **self._pems)
        return self._wire(link)

    def _wire(self, link):
        """``link`` (a member's channel) shares this router's caches and reports to it."""
        address = link.address
        link.state_lock = self._state_lock
        link.accepted, link.local_tokens = self.accepted, self.local_tokens
        link.members_changed = self._members_told
        link.watch(lambda kind, revoked_id: self._revoked and self._revoked(kind, revoked_id))
        link.watch_trusted_cas(lambda pem: self._cas_changed and self._cas_changed(pem))
        link.watch_peers(self._peer_back)
        link.watch_routes(lambda route: self._routed and self._routed(route))
        link.watch_state(self._state, lambda answer: self._reconciled and self._reconciled(answer))
        link.watch_edge_faults(lambda generation, faults, a=address: self._faults_told(a, generation, faults))
        if self._online is not None:  # it reports the router's whole state as soon as it connects
            link._online_url, link._online_version = self._online[0], dict(self._online[1])
        link._link_url = self._link_url
        if hasattr(link, "start_watching"):  # the local member: its member list from now on
            link.start_watching()
        return link

    def _add(self, address: str) -> None:
        """Dial ``address`` in the background (a member told or kept); nothing if a channel to it exists."""
        with self._lock:
            if self._closing or address in self.links:
                return
            link = self.links[address] = self._new_link(address)
        log.info("router: dialing the controller at %s", address)
        link.start()

    def _remove(self, address: str) -> None:
        with self._lock:
            if self._local is not None and address == self._local.address:
                return
            link = self.links.pop(address, None)
        if link is not None:
            log.info("router: the controller at %s left the cluster: closing its control channel", address)
            threading.Thread(target=link.close, name="router-ctrl-close", daemon=True).start()

    # -- the member list ------------------------------------------------------------------
    def _members_told(self, link: RemoteControllerLink, args: dict) -> None:
        """A ``ctrlAddresses`` push (on ``link``'s thread): take a newer list, follow the leader."""
        controllers = [
            c for c in args["controllers"] if isinstance(c, dict) and isinstance(c.get("address"), str) and c["address"]
        ]
        index, is_leader = args.get("index"), args.get("isLeader") is True
        if not isinstance(index, int) or isinstance(index, bool):
            return
        with self._lock:
            if self._closing or self.links.get(link.address) is not link:
                return
            if is_leader:
                self._leader = link.address
            elif self._leader == link.address:
                self._leader = None
            if not controllers or (self._index and index <= self._index):
                return
            wanted = [c["address"] for c in controllers]
            by_id = {c.get("id"): c["address"] for c in controllers}
            # a channel to a listed member under another name (e.g. the enrolled localhost address): the listed one
            aliases = [
                a for a, other in self.links.items() if a not in wanted and by_id.get(other.ctrl_id) not in (None, a)
            ]
            removed = [a for a in self.links if a not in wanted and a not in aliases]
            if removed and not is_leader:  # a member that does not lead only adds (the real router's rule)
                wanted += removed
                removed = []
            self._index = index
            self._addresses = list(dict.fromkeys(wanted))
        log.info("router: the cluster's members (index %d): %s", index, ", ".join(self._addresses))
        for address in self._addresses:
            self._add(address)
        for address in removed + aliases:
            self._remove(address)
        self._save()

    def _save(self) -> None:
        """The member list in the data folder (owner-only, atomically): the router dials them at its next start."""
        if self.data is None:
            return
        content = {"endpoints": self._addresses, "index": self._index}
        path = self.data / ENDPOINTS_FILE
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "w") as out:
                json.dump(content, out)
            os.replace(temporary, path)
        except OSError as ex:
            log.warning("router: cannot keep the controller list in %s (%s)", path, ex.strerror)

    # -- choosing a member -----------------------------------------------------------------
    def _candidates(self) -> list[RemoteControllerLink]:
        """Connected members, the leader first, then the one that answered last, then the others."""
        with self._lock:
            links = [link for link in self.links.values() if link.connected.is_set()]
            first = {self._leader: 0, self._last: 1}
            if self._local is not None:  # in the same process: never away while the router lives
                first[self._local.address] = -1
        return sorted(links, key=lambda link: first.get(link.address, 2))

    def _one(self, name: str, retry_failed: bool = False, **args) -> tuple[Any, RemoteControllerLink]:
        """``name`` answered by the first member that can; ``ControlError`` when none can. A member that failed
        the request (``RuntimeError``) is tried again elsewhere when ``retry_failed`` (a write a member without a
        quorum refused)."""
        error: Exception = ControlError("no controller is connected")
        for link in self._candidates():
            try:
                result = link._call(name, **args)
            except (ControlError, TimeoutError) as ex:
                error = ex if isinstance(ex, ControlError) else ControlError(str(ex))
                continue
            except RuntimeError as ex:
                if not retry_failed:
                    raise
                error = ex
                continue
            with self._lock:
                self._last = link.address
            return result, link
        raise error

    def _checked(self, name: str, **args) -> tuple[Any, RemoteControllerLink]:
        """A call whose refusal the SDK is told; no member reachable is a refusal too."""
        try:
            return self._one(name, **args)
        except (ControlError, RuntimeError) as ex:
            raise refusal(ex) from None

    def _each(self, name: str, **args) -> None:
        """Tell every connected member, without waiting."""
        for link in self._candidates():
            link._notify(name, **args)

    def _first(self) -> RemoteControllerLink:
        if self._local is not None:
            return self._local
        candidates = self._candidates()
        if candidates:
            return candidates[0]
        with self._lock:
            return next(iter(self.links.values()))

    # -- what members push ------------------------------------------------------------------
    def _peer_back(self, peer: dict) -> None:
        """Every member tells of a router whose link listener is back: the first telling is enough."""
        now, key = time.monotonic(), (peer.get("router_id"), peer.get("url"))
        with self._lock:
            if now - self._peers_told.get(key, -PEER_REPEAT) < PEER_REPEAT:
                return
            self._peers_told[key] = now
            if len(self._peers_told) > MAX_CIRCUITS:
                self._peers_told.clear()
        if self._peer_returned is not None:
            self._peer_returned(peer)

    def _state(self) -> concurrent.futures.Future:
        if self._report is not None:
            return self._report()
        done: concurrent.futures.Future = concurrent.futures.Future()
        done.set_result({"terminators": list(self._terminators.values())})
        return done

    def _faults_told(self, address: str, generation: int, faults: list) -> None:
        """Edge faults (simulation) come from the member that timed them; an empty set from another is not news."""
        with self._lock:
            if not faults and self._faults_from not in (None, address):
                return
            self._faults_from = address if faults else None
            self._faults = (generation, list(faults))
        if self._faults_changed is not None:
            self._faults_changed(generation, list(faults))

    # -- ControllerLink -----------------------------------------------------------------------
    @property
    def router_id(self) -> str:
        return self._first().router_id

    @property
    def name(self) -> str:
        return self._first().name

    def credentials(self) -> dict:
        return self._first().credentials()

    def trusted_cas(self) -> str:
        return self._one("trustedCas")[0]

    def hello(self, token: str, fingerprint: str) -> dict:
        """The first reachable member's answer; with none reachable, what one accepted before (as a single
        controller's channel does)."""
        try:
            caller, answered = self._one("hello", token=token, fingerprint=fingerprint)
        except RuntimeError as ex:
            raise PermissionError(f"the controller failed: {ex}") from None
        except ControlError as ex:
            caller = self.accepted.get(token, fingerprint) or self.local_tokens.caller(token, fingerprint)
            if caller is None:
                raise PermissionError(f"the controller is unreachable ({ex})") from None
            log.info("router: no controller is reachable; an SDK hello accepted as a controller did before")
            return caller
        except PermissionError:
            self.accepted.forget(token, fingerprint)
            raise
        self.accepted.add(token, fingerprint, caller)
        for link in self._candidates():  # each member checks a dial against the token the SDK presented last
            if link is not answered:
                link._notify("hello", token=token, fingerprint=fingerprint)
        return caller

    def session(self, caller: Caller, token: str, kind: str) -> dict:
        return self._checked("session", caller=caller.to_wire(), token=token, kind=kind)[0]

    def add_terminator(self, terminator: Terminator) -> None:
        self._terminators[terminator.terminator_id] = terminator
        try:
            with self._state_lock:
                self._one("addTerminator", retry_failed=True, **terminator.to_wire())
        except BaseException:
            self._terminators.pop(terminator.terminator_id, None)
            raise

    def remove_terminator(self, terminator_id: str) -> None:
        self._terminators.pop(terminator_id, None)
        try:
            with self._state_lock:
                self._one("removeTerminator", retry_failed=True, terminatorId=terminator_id)
        except (ControlError, RuntimeError) as ex:
            log.info("router: terminator %s not removed on the controller now (%s)", terminator_id, ex)

    def online(self, url: str, version_info: Mapping[str, str] | None = None) -> None:
        """``online`` to one member (it drops this router's stale terminators), the whole state to the others."""
        version = dict(version_info or {})
        with self._lock:
            self._online = (url, version)
            links = list(self.links.values())
        for link in links:  # set first: a member connecting from now on reconciles at once
            link._online_url, link._online_version = url, dict(version)
        first = self._first()
        first.online(url, version)
        for link in self._candidates():
            if link is not first:
                try:
                    link.reconcile_now()
                except (ControlError, TimeoutError, RuntimeError) as ex:  # it reconciles when it reconnects
                    log.info("router: reporting to the controller at %s failed (%s)", link.address, ex)

    def offline(self) -> None:
        """``offline`` to one member (the router's terminators go, cluster-wide); the others see the channel close."""
        with self._lock:
            self._online = None
            links = list(self.links.values())
        for link in links:
            link._online_url = None
        try:
            self._one("offline")
        except (ControlError, RuntimeError) as ex:
            log.info("router: could not report offline (%s)", ex)

    def watch_edge_faults(self, changed: Callable[[int, list], None]) -> None:
        self._faults_changed = changed
        changed(*self._faults)

    def edge_fault_hits(self, generation: int, hits: dict[str, int]) -> None:
        with self._lock:
            link = self.links.get(self._faults_from or "")
        (link or self._first())._notify("edgeFaultHits", generation=generation, hits=dict(hits))

    def connection_changed(self, identity_id: str, connected: bool) -> None:
        self._each("connectionChanged", identityId=identity_id, connected=connected)

    def emit(self, namespace: str, event_type: str, **fields) -> None:
        fields = {key: value for key, value in fields.items() if key != "router_id"}
        self._each("emit", namespace=namespace, eventType=event_type, fields=fields)

    # -- links and circuits --------------------------------------------------------------------
    def link_listen(self, url: str) -> None:
        with self._lock:
            self._link_url = url
            links = list(self.links.values())
        for link in links:
            link._link_url = url
        _, first = self._one("linkListen", url=url)
        for link in self._candidates():
            if link is not first:
                link._notify("linkListen", url=url)

    def peers(self) -> list[dict]:
        return self._one("peers")[0]

    def link_peer(self, router_id: str, fingerprint: str) -> dict:
        return self._checked("linkPeer", routerId=router_id, fingerprint=fingerprint)[0]

    def link_up(self, link_id: str, dst_router_id: str) -> None:
        _, first = self._one("linkUp", linkId=link_id, dstRouterId=dst_router_id)
        for link in self._candidates():
            if link is not first:
                link._notify("linkUp", linkId=link_id, dstRouterId=dst_router_id)

    def link_latency(self, link_id: str, latency_ns: int) -> None:
        self._each("linkLatency", linkId=link_id, latencyNs=int(latency_ns))

    def link_down(self, link_id: str) -> None:
        self._each("linkDown", linkId=link_id)

    def dial(self, caller: Caller, token: str, instance_id: str, dialer_key: bool, headers=None) -> dict:
        route, link = self._checked("dial", **dial_args(caller, token, instance_id, dialer_key, headers))
        return self._dialed(route, link)

    async def dial_async(self, caller: Caller, token: str, instance_id: str, dialer_key: bool, headers=None) -> dict:
        """:meth:`dial` in the router's loop: asked of the first member there (no worker thread); when that member
        cannot answer (or is the in-process one), every member in turn as :meth:`dial` does, on a worker thread."""
        candidates = self._candidates()
        first = candidates[0] if candidates else None
        if isinstance(first, RemoteControllerLink) and first.here():
            try:
                route = await first.dial_request(caller, token, instance_id, dialer_key, headers)
            except RuntimeError as ex:
                raise refusal(ex) from None
            except ControlError:
                pass
            else:
                with self._lock:
                    self._last = first.address
                return self._dialed(route, first)
        return await asyncio.to_thread(self.dial, caller, token, instance_id, dialer_key, headers)

    def _dialed(self, route, link) -> dict:
        """The answering member is remembered for the circuit's ``circuitDown``."""
        circuit_id = route.get("circuit_id") if isinstance(route, dict) else None
        if circuit_id:
            with self._lock:
                self._circuits[circuit_id] = link.address
                if len(self._circuits) > MAX_CIRCUITS:
                    self._circuits.popitem(last=False)
        return route

    def circuit_down(self, circuit: dict) -> None:
        """To the member that answered the circuit's dial (its circuits are its own), else any."""
        with self._lock:
            address = self._circuits.pop(str(circuit.get("circuit_id")), None)
            link = self.links.get(address or "")
        if link is None or not link.connected.is_set():
            candidates = self._candidates()
            if not candidates:
                return
            link = candidates[0]
        link._notify("circuitDown", circuit=dict(circuit))
