"""The controller's handler of every request a router may send: ONE table, name -> the ``RouterLink`` call.

The messages themselves (names, argument schemas, the records) are declared once in :mod:`protocol`, which the
router imports too. A router's request ``{"type": "request", "id", "name", "args"}`` is checked against its
schema there (every field present with its type, nothing else) and calls that router's ``RouterLink`` here.
Adding a request is one schema in ``protocol.REQUESTS``, one handler here (a test checks they match), one method
on the router's ``RemoteControllerLink``, and a row in ``docs/control-channel.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import urlsplit

import protocol
from protocol import CHANNEL, LINK, TERMINATOR, VERSION, Caller, InvalidArgs, Terminator

__all__ = ["MESSAGES", "VERSION", "Caller", "Entry", "InvalidArgs", "Terminator"]

#: event namespaces a router may put on the timeline (its own edge and link events)
ROUTER_EVENT_NAMESPACES = frozenset({"circuit", "terminator", "link"})
#: at most this many entries in each list of a reconcile (a router's terminators, links and SDK channels)
MAX_RECONCILE = 100_000
#: at most this many faults in one hit report (a router reports only the faults it was sent)
MAX_HIT_REPORT = 1000


@dataclass(frozen=True)
class Entry:
    """One request: its argument schema (from :mod:`protocol`) and the call it makes."""

    name: str
    args: dict[str, tuple[type, ...]]
    call: Callable[[Any, dict, str], Any]
    #: answered in the control channel's loop when it can be (:data:`QUICK`)
    quick: bool = False

    def check(self, args: Any) -> dict:
        return protocol.check(self.name, self.args, args)


def _caller(value) -> Caller:
    try:
        return Caller.from_wire(value)
    except InvalidArgs as ex:
        raise InvalidArgs(f"session: {ex}") from None


def _terminator(args: dict) -> Terminator:
    try:
        return Terminator.from_wire(args)
    except InvalidArgs as ex:
        raise InvalidArgs(f"addTerminator: {ex}") from None


def _url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme != "tls" or not parts.hostname or not parts.port:
        raise InvalidArgs("url must be tls://host:port")
    return url


def _items(args: dict, field: str, schema: dict) -> list[dict]:
    if len(args[field]) > MAX_RECONCILE:
        raise InvalidArgs(f"reconcile: more than {MAX_RECONCILE} {field}")
    return [protocol.check(f"reconcile: {field}", schema, item) for item in args[field]]


def _reconcile(link, args: dict, router_id: str) -> dict:
    terminators = [_terminator(item) for item in _items(args, "terminators", TERMINATOR)]
    links = [
        {"link_id": item["linkId"], "router_id": item["routerId"], "dialed": item["dialed"]}
        for item in _items(args, "links", LINK)
    ]
    channels = [(item["token"], item["fingerprint"]) for item in _items(args, "channels", CHANNEL)]
    link_url = _url(args["linkUrl"]) if args["linkUrl"] is not None else None
    version_info = _version_info("reconcile", args["versionInfo"])
    return link.reconcile(_url(args["url"]), link_url, terminators, links, channels, version_info)


VERSION_FIELDS = ("version", "revision", "buildDate", "os", "arch")


def _version_info(name: str, value: dict) -> dict[str, str]:
    """The build a router reports (``online``, ``reconcile``): the five strings of the real ``versionInfo``, each
    short."""
    if set(value) - set(VERSION_FIELDS):
        raise InvalidArgs(f"{name}: versionInfo has only {', '.join(VERSION_FIELDS)}")
    fields = {key: value.get(key, "") for key in VERSION_FIELDS}
    if not all(isinstance(v, str) and len(v) <= 100 for v in fields.values()):
        raise InvalidArgs(f"{name}: versionInfo fields are strings of at most 100 characters")
    return fields


def _emit(link, args: dict, router_id: str) -> None:
    if args["namespace"] not in ROUTER_EVENT_NAMESPACES:
        raise InvalidArgs(f"emit: namespace {args['namespace']!r} is not a router event namespace")
    # APPSEC(ctrl-emit): a router speaks for itself only; the router id comes from its certificate
    fields = {key: value for key, value in args["fields"].items() if key not in ("namespace", "event_type")}
    fields["router_id"] = router_id
    link.emit(args["namespace"], args["eventType"], **fields)


def _hits(value: dict) -> dict[str, int]:
    if len(value) > MAX_HIT_REPORT:
        raise InvalidArgs(f"edgeFaultHits: more than {MAX_HIT_REPORT} faults")
    for key, count in value.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise InvalidArgs(f"edgeFaultHits: the count of {key[:40]!r} is not a non-negative integer")
    return value


#: name -> handler (link: the router's ``RouterLink``, a: checked args, r: the connection's router id)
HANDLERS: dict[str, Callable[[Any, dict, str], Any]] = {
    "trustedCas": lambda link, a, r: link.trusted_cas(),
    "hello": lambda link, a, r: link.hello(a["token"], a["fingerprint"]),
    "session": lambda link, a, r: link.session(_caller(a["caller"]), a["token"], a["kind"]),
    "addTerminator": lambda link, a, r: link.add_terminator(_terminator(a)),
    "removeTerminator": lambda link, a, r: link.remove_terminator(a["terminatorId"]),
    "online": lambda link, a, r: link.online(_url(a["url"]), _version_info("online", a["versionInfo"])),
    "offline": lambda link, a, r: link.offline(),
    # every (re)connect: the router's whole state; the answer says what it must drop
    "reconcile": _reconcile,
    "connectionChanged": lambda link, a, r: link.connection_changed(a["identityId"], a["connected"]),
    "emit": _emit,
    # links (router/peer_links.py)
    "linkListen": lambda link, a, r: link.link_listen(_url(a["url"])),
    "peers": lambda link, a, r: link.peers(),
    "linkPeer": lambda link, a, r: link.link_peer(a["routerId"], a["fingerprint"]),
    "linkUp": lambda link, a, r: link.link_up(a["linkId"], a["dstRouterId"]),
    "linkLatency": lambda link, a, r: link.link_latency(a["linkId"], max(0, a["latencyNs"])),
    "linkDown": lambda link, a, r: link.link_down(a["linkId"]),
    # circuits (router/edge.py): one request per dial, then the circuit's end
    "dial": lambda link, a, r: link.dial(
        _caller(a["caller"]), a["token"], a["instanceId"], a["dialerKey"], protocol.dial_headers(a["headers"])
    ),
    "circuitDown": lambda link, a, r: link.circuit_down(a["circuit"]),
    # faults on the router's edge messages (the edgeFaults push sets them; router/faults.py)
    "edgeFaultHits": lambda link, a, r: link.edge_fault_hits(a["generation"], _hits(a["hits"])),
}

#: the requests of every dial and circuit, which read and take microseconds: answered in the control channel's
#: loop while the store is free (``RouterLink.now``: a worker thread out and back cost a dial about 300 µs here);
#: when it is not, or the request would write (an activity stamp due, a session found stale), on a worker
QUICK = frozenset({"session", "dial", "circuitDown", "linkLatency"})

MESSAGES: dict[str, Entry] = {
    name: Entry(name, schema, HANDLERS[name], name in QUICK)
    for name, schema in protocol.REQUESTS.items()
    if name in HANDLERS
}
