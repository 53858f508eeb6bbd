"""The control channel's message set: ONE table, name -> (argument schema, the ``RouterLink`` call).

A router's request ``{"type": "request", "id", "name", "args"}`` is checked against its entry's
schema (every field present with its type, nothing else) and calls that router's ``RouterLink``.
Adding a message is adding one :class:`Entry` here (and a line in ``docs/control-channel.md``).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import urlsplit

#: the protocol version a router's hello must name; another answers UNSUPPORTED_VERSION and closes
VERSION = 1
OPTIONAL_STR = (str, type(None))
#: event namespaces a router may put on the timeline (its own edge and link events)
ROUTER_EVENT_NAMESPACES = frozenset({"circuit", "terminator", "link"})


class InvalidArgs(ValueError):
    """A request whose arguments do not match its entry's schema."""


@dataclass(frozen=True)
class Caller:
    """The API session a channel's hello named (what ``RouterLink.session`` reads)."""

    api_session_id: str
    identity_id: str
    identity_name: str = ""


@dataclass(frozen=True)
class Terminator:
    """A binding the router records (what ``RouterLink.add_terminator`` reads)."""

    terminator_id: str
    service_id: str
    identity_id: str
    cost: int
    precedence: str
    instance_id: str
    host_public_key: bytes | None


@dataclass(frozen=True)
class Entry:
    """One message: its argument schema (field -> allowed types) and the call it makes."""

    name: str
    args: dict[str, tuple[type, ...]]
    call: Callable[[Any, dict, str], Any]

    def check(self, args: Any) -> dict:
        if not isinstance(args, dict):
            raise InvalidArgs(f"{self.name}: args must be an object")
        unknown = sorted(set(args) - set(self.args))
        if unknown:
            raise InvalidArgs(f"{self.name}: unknown argument {unknown[0]!r}")
        for field, types in self.args.items():
            if field not in args:
                raise InvalidArgs(f"{self.name}: argument {field!r} is required")
            value = args[field]
            if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                raise InvalidArgs(f"{self.name}: argument {field!r} has the wrong type")
        return args


def _caller(value: dict) -> Caller:
    if not isinstance(value, dict) or not all(isinstance(value.get(k), str) for k in ("apiSessionId", "identityId")):
        raise InvalidArgs("session: caller needs apiSessionId and identityId strings")
    return Caller(value["apiSessionId"], value["identityId"], str(value.get("identityName") or ""))


def _terminator(args: dict) -> Terminator:
    key = args["hostPublicKey"]
    try:
        raw_key = base64.b64decode(key, validate=True) if key is not None else None
    except (binascii.Error, ValueError):
        raise InvalidArgs("addTerminator: hostPublicKey is not base64") from None
    if not 0 <= args["cost"] <= 65535:
        raise InvalidArgs("addTerminator: cost outside 0..65535")
    if args["precedence"] not in ("default", "required", "failed"):
        raise InvalidArgs("addTerminator: precedence is not default, required or failed")
    return Terminator(
        args["terminatorId"],
        args["serviceId"],
        args["identityId"],
        args["cost"],
        args["precedence"],
        args["instanceId"],
        raw_key,
    )


def _url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme != "tls" or not parts.hostname or not parts.port:
        raise InvalidArgs("url must be tls://host:port")
    return url


VERSION_FIELDS = ("version", "revision", "buildDate", "os", "arch")


def _version_info(value: dict) -> dict[str, str]:
    """The build a router reports at ``online``: the five strings of the real ``versionInfo``, each short."""
    if set(value) - set(VERSION_FIELDS):
        raise InvalidArgs(f"online: versionInfo has only {', '.join(VERSION_FIELDS)}")
    fields = {key: value.get(key, "") for key in VERSION_FIELDS}
    if not all(isinstance(v, str) and len(v) <= 100 for v in fields.values()):
        raise InvalidArgs("online: versionInfo fields are strings of at most 100 characters")
    return fields


def _emit(link, args: dict, router_id: str) -> None:
    if args["namespace"] not in ROUTER_EVENT_NAMESPACES:
        raise InvalidArgs(f"emit: namespace {args['namespace']!r} is not a router event namespace")
    # APPSEC(ctrl-emit): a router speaks for itself only; the router id comes from its certificate
    fields = {key: value for key, value in args["fields"].items() if key not in ("namespace", "event_type")}
    fields["router_id"] = router_id
    link.emit(args["namespace"], args["eventType"], **fields)


#: at most this many faults in one hit report (a router reports only the faults it was sent)
MAX_HIT_REPORT = 1000


def _hits(value: dict) -> dict[str, int]:
    if len(value) > MAX_HIT_REPORT:
        raise InvalidArgs(f"edgeFaultHits: more than {MAX_HIT_REPORT} faults")
    for key, count in value.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise InvalidArgs(f"edgeFaultHits: the count of {key[:40]!r} is not a non-negative integer")
    return value


ENTRIES = (
    Entry("trustedCas", {}, lambda link, a, r: link.trusted_cas()),
    Entry(
        "hello", {"token": (str,), "fingerprint": (str,)}, lambda link, a, r: link.hello(a["token"], a["fingerprint"])
    ),
    Entry(
        "session",
        {"caller": (dict,), "token": (str,), "kind": (str,)},
        lambda link, a, r: link.session(_caller(a["caller"]), a["token"], a["kind"]),
    ),
    Entry(
        "addTerminator",
        {
            "terminatorId": (str,),
            "serviceId": (str,),
            "identityId": (str,),
            "cost": (int,),
            "precedence": (str,),
            "instanceId": (str,),
            "hostPublicKey": OPTIONAL_STR,
        },
        lambda link, a, r: link.add_terminator(_terminator(a)),
    ),
    Entry("removeTerminator", {"terminatorId": (str,)}, lambda link, a, r: link.remove_terminator(a["terminatorId"])),
    Entry(
        "online",
        {"url": (str,), "versionInfo": (dict,)},
        lambda link, a, r: link.online(_url(a["url"]), _version_info(a["versionInfo"])),
    ),
    Entry("offline", {}, lambda link, a, r: link.offline()),
    Entry(
        "connectionChanged",
        {"identityId": (str,), "connected": (bool,)},
        lambda link, a, r: link.connection_changed(a["identityId"], a["connected"]),
    ),
    Entry("emit", {"namespace": (str,), "eventType": (str,), "fields": (dict,)}, _emit),
    # links and circuits (router/links.py, router/edge.py)
    Entry("linkListen", {"url": (str,)}, lambda link, a, r: link.link_listen(_url(a["url"]))),
    Entry("peers", {}, lambda link, a, r: link.peers()),
    Entry(
        "linkPeer",
        {"routerId": (str,), "fingerprint": (str,)},
        lambda link, a, r: link.link_peer(a["routerId"], a["fingerprint"]),
    ),
    Entry(
        "linkUp",
        {"linkId": (str,), "dstRouterId": (str,)},
        lambda link, a, r: link.link_up(a["linkId"], a["dstRouterId"]),
    ),
    Entry(
        "linkLatency",
        {"linkId": (str,), "latencyNs": (int,)},
        lambda link, a, r: link.link_latency(a["linkId"], max(0, a["latencyNs"])),
    ),
    Entry("linkDown", {"linkId": (str,)}, lambda link, a, r: link.link_down(a["linkId"])),
    Entry(
        "route",
        {"identityId": (str,), "serviceId": (str,), "instanceId": (str,)},
        lambda link, a, r: link.route(a["identityId"], a["serviceId"], a["instanceId"]),
    ),
    Entry("circuitUp", {"circuit": (dict,)}, lambda link, a, r: link.circuit_up(a["circuit"])),
    Entry("circuitDown", {"circuit": (dict,)}, lambda link, a, r: link.circuit_down(a["circuit"])),
    # faults on the router's edge messages (the edgeFaults push sets them; router/faults.py)
    Entry(
        "edgeFaultHits",
        {"generation": (int,), "hits": (dict,)},
        lambda link, a, r: link.edge_fault_hits(a["generation"], _hits(a["hits"])),
    ),
)

MESSAGES: dict[str, Entry] = {entry.name: entry for entry in ENTRIES}
