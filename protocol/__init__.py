"""The control channel between routers and the controller, declared once: both sides import this module (and the
router nothing else of the controller). ``docs/control-channel.md`` is its prose.

* :data:`VERSION`, the framing (:func:`encode`, :func:`read_frame`, :class:`FrameParser`);
* the records both sides pass: :class:`Caller`, :class:`Terminator` (and their wire forms);
* :data:`REQUESTS`: every request a router may send, name -> argument schema (field -> allowed types; every
  field required, nothing else accepted); :data:`PUSHES`: every push the controller sends, name -> its fields.

Each side binds a handler to every name (the controller: ``controller/ctrl/messages.py``, one ``RouterLink``
call each; the router: ``router/control.py``, ``PUSHES``), and a test checks both cover these tables.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import struct
from dataclasses import dataclass

import orjson

#: 2: ``reconcile`` at every connect, the ``peerOnline`` push, ``dial`` (one request per dial) replacing ``route``
#: and ``circuitUp``; 3: ``dial`` carries the dialer's ``headers`` and the controller pushes a multi-hop ``route`` to
#: the routers after the first (``docs/control-channel.md``)
VERSION = 3

# -- framing: a 4-byte big-endian length, then that many bytes of one UTF-8 JSON object with a string type ----------
LENGTH = struct.Struct(">I")
#: a trusted-CA bundle with a few hundred CAs fits; anything bigger is hostile
MAX_FRAME = 4 * 1024 * 1024


class FrameError(ValueError):
    """The peer sent something that is not a control channel frame."""


def encode(message: dict) -> bytes:
    body = orjson.dumps(message)
    return LENGTH.pack(len(body)) + body


async def read_frame(reader: asyncio.StreamReader) -> dict:
    """The next message; ``asyncio.IncompleteReadError`` at end of stream, :class:`FrameError` when malformed."""
    (length,) = LENGTH.unpack(await reader.readexactly(LENGTH.size))
    _check_length(length)
    return _message(await reader.readexactly(length))


class FrameParser:
    """Frames as the bytes arrive (in a protocol's ``data_received``, no task per frame): :meth:`feed` returns the
    messages complete so far, in order; :class:`FrameError` as :func:`read_frame` raises it."""

    def __init__(self, leftover: bytes = b""):
        self.buffer = bytearray(leftover)

    def feed(self, data: bytes) -> list[dict]:
        buffer, offset, messages = self.buffer, 0, []
        buffer += data
        while len(buffer) - offset >= LENGTH.size:
            (length,) = LENGTH.unpack_from(buffer, offset)
            _check_length(length)
            end = offset + LENGTH.size + length
            if len(buffer) < end:
                break
            messages.append(_message(buffer[offset + LENGTH.size : end]))  # orjson reads a bytearray: one copy
            offset = end
        del buffer[:offset]
        return messages


def _check_length(length: int) -> None:
    if not 0 < length <= MAX_FRAME:
        raise FrameError(f"frame length {length} outside 1..{MAX_FRAME}")


def _message(body: bytes | bytearray) -> dict:
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise FrameError("frame is not JSON") from None
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise FrameError("frame is not an object with a string type")
    return message


# -- records ---------------------------------------------------------------------------------------------------------
class InvalidArgs(ValueError):
    """A request whose arguments do not match its schema."""


@dataclass(frozen=True)
class Caller:
    """The API session an SDK channel's hello named, checked against its certificate."""

    api_session_id: str
    identity_id: str
    identity_name: str = ""

    def to_wire(self) -> dict:
        return {"apiSessionId": self.api_session_id, "identityId": self.identity_id, "identityName": self.identity_name}

    @classmethod
    def from_wire(cls, value) -> "Caller":
        if not isinstance(value, dict) or not all(
            isinstance(value.get(k), str) for k in ("apiSessionId", "identityId")
        ):
            raise InvalidArgs("caller needs apiSessionId and identityId strings")
        return cls(value["apiSessionId"], value["identityId"], str(value.get("identityName") or ""))


@dataclass(frozen=True)
class Terminator:
    """A binding a router records on the controller (``binding: edge``)."""

    terminator_id: str
    service_id: str
    identity_id: str
    cost: int = 0
    precedence: str = "default"
    instance_id: str = ""
    host_public_key: bytes | None = None

    def to_wire(self) -> dict:
        key = self.host_public_key
        return {
            "terminatorId": self.terminator_id,
            "serviceId": self.service_id,
            "identityId": self.identity_id,
            "cost": self.cost,
            "precedence": self.precedence,
            "instanceId": self.instance_id,
            "hostPublicKey": base64.b64encode(key).decode("ascii") if key else None,
        }

    @classmethod
    def from_wire(cls, args: dict) -> "Terminator":
        """From arguments already checked against :data:`TERMINATOR`; :class:`InvalidArgs` for bad values."""
        key = args["hostPublicKey"]
        try:
            raw_key = base64.b64decode(key, validate=True) if key is not None else None
        except (binascii.Error, ValueError):
            raise InvalidArgs("hostPublicKey is not base64") from None
        if not 0 <= args["cost"] <= 65535:
            raise InvalidArgs("cost outside 0..65535")
        if args["precedence"] not in ("default", "required", "failed"):
            raise InvalidArgs("precedence is not default, required or failed")
        return cls(
            args["terminatorId"],
            args["serviceId"],
            args["identityId"],
            args["cost"],
            args["precedence"],
            args["instanceId"],
            raw_key,
        )


# -- the messages ----------------------------------------------------------------------------------------------------
OPTIONAL_STR = (str, type(None))

TERMINATOR = {
    "terminatorId": (str,),
    "serviceId": (str,),
    "identityId": (str,),
    "cost": (int,),
    "precedence": (str,),
    "instanceId": (str,),
    "hostPublicKey": OPTIONAL_STR,
}
#: one link of a ``reconcile``: its id, the peer router, whether the reporting router dialed it
LINK = {"linkId": (str,), "routerId": (str,), "dialed": (bool,)}
#: one SDK channel of a ``reconcile``: what it presented last (hello or UpdateToken)
CHANNEL = {"token": (str,), "fingerprint": (str,)}

#: the ``route`` push: a circuit's route and what the host's Dial carries (the dialer's identity, its Connect
#: ``headers``: header id in decimal -> the value in base64, as the ``dial`` request sent them)
ROUTE = {
    "circuitId": (str,),
    "serviceId": (str,),
    "terminatorId": (str,),
    "path": (list,),
    "links": (list,),
    "identityId": (str,),
    "identityName": (str,),
    "headers": (dict,),
}
#: at most this many headers in a ``dial`` (the router copies four from the dialer's Connect)
MAX_DIAL_HEADERS = 16

#: router -> controller requests: name -> argument schema
REQUESTS: dict[str, dict[str, tuple[type, ...]]] = {
    "trustedCas": {},
    "hello": {"token": (str,), "fingerprint": (str,)},
    "session": {"caller": (dict,), "token": (str,), "kind": (str,)},
    "addTerminator": TERMINATOR,
    "removeTerminator": {"terminatorId": (str,)},
    "online": {"url": (str,), "versionInfo": (dict,)},
    "offline": {},
    "reconcile": {
        "url": (str,),
        "linkUrl": OPTIONAL_STR,
        "terminators": (list,),
        "links": (list,),
        "channels": (list,),
        "versionInfo": (dict,),
    },
    "connectionChanged": {"identityId": (str,), "connected": (bool,)},
    "emit": {"namespace": (str,), "eventType": (str,), "fields": (dict,)},
    "linkListen": {"url": (str,)},
    "peers": {},
    "linkPeer": {"routerId": (str,), "fingerprint": (str,)},
    "linkUp": {"linkId": (str,), "dstRouterId": (str,)},
    "linkLatency": {"linkId": (str,), "latencyNs": (int,)},
    "linkDown": {"linkId": (str,)},
    "dial": {"caller": (dict,), "token": (str,), "instanceId": (str,), "dialerKey": (bool,), "headers": (dict,)},
    "circuitDown": {"circuit": (dict,)},
    "edgeFaultHits": {"generation": (int,), "hits": (dict,)},
}

#: controller -> router pushes: name -> fields
PUSHES: dict[str, dict[str, tuple[type, ...]]] = {
    "revoked": {"kind": (str,), "id": (str,)},
    "trustedCas": {"pem": (str,)},
    "edgeFaults": {"generation": (int,), "faults": (list,)},
    "peerOnline": {"routerId": (str,), "name": (str,), "url": (str,)},
    "oidcKeys": {"jwks": (dict,)},
    #: a cluster's members (the real ``UpdateCtrlAddresses``): ``controllers`` [{``id``, ``address``}], the raft
    #: ``index`` they are as of, whether the sender leads; an addition to version 2 (a router without it ignores it)
    "ctrlAddresses": {"controllers": (list,), "index": (int,), "isLeader": (bool,)},
    #: a dial across links (version 3): the circuit's route, to every router of the path after the first, sent
    #: before the answer to the first (see :func:`route_push`)
    "route": ROUTE,
}


def dial_headers(headers: dict) -> dict[str, str]:
    """The ``headers`` of a ``dial`` (header id in decimal -> base64 value), checked; :class:`InvalidArgs` if not."""
    if len(headers) > MAX_DIAL_HEADERS:
        raise InvalidArgs(f"dial: more than {MAX_DIAL_HEADERS} headers")
    for key, value in headers.items():
        if not key.isdigit() or len(key) > 10 or not isinstance(value, str):
            raise InvalidArgs("dial: headers map header ids (decimal) to base64 strings")
    return headers


def encode_headers(headers: dict[int, bytes]) -> dict[str, str]:
    """Channel headers (id -> bytes) in the form ``dial`` and ``route`` carry them."""
    return {str(key): base64.b64encode(value).decode("ascii") for key, value in headers.items()}


def decode_headers(headers: dict) -> dict[int, bytes]:
    """The channel headers a ``route`` push carries; :class:`InvalidArgs` when malformed."""
    try:
        return {int(key): base64.b64decode(value, validate=True) for key, value in dial_headers(headers).items()}
    except (binascii.Error, ValueError, TypeError):
        raise InvalidArgs("route: headers are not base64") from None


def dial_args(caller: Caller, token: str, instance_id: str, dialer_key: bool, headers=None) -> dict:
    """The ``dial`` request's arguments (both of the router's controller links send them)."""
    return {
        "caller": caller.to_wire(),
        "token": token,
        "instanceId": instance_id or "",
        "dialerKey": dialer_key,
        "headers": dict(headers or {}),
    }


def route_push(route: dict, identity_id: str, identity_name: str, headers: dict) -> dict:
    """The ``route`` push's arguments for a route the controller answers a ``dial`` with."""
    return {
        "circuitId": route["circuit_id"],
        "serviceId": route["service_id"],
        "terminatorId": route["terminator_id"],
        "path": list(route["path"]),
        "links": list(route["links"]),
        "identityId": identity_id,
        "identityName": identity_name,
        "headers": dict(headers),
    }


def check(name: str, schema: dict[str, tuple[type, ...]], args) -> dict:
    """``args`` if it is an object with exactly the schema's fields, each of an allowed type; else InvalidArgs."""
    if not isinstance(args, dict):
        raise InvalidArgs(f"{name}: args must be an object")
    unknown = sorted(set(args) - set(schema))
    if unknown:
        raise InvalidArgs(f"{name}: unknown argument {unknown[0]!r}")
    for field, types in schema.items():
        if field not in args:
            raise InvalidArgs(f"{name}: argument {field!r} is required")
        value = args[field]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise InvalidArgs(f"{name}: argument {field!r} has the wrong type")
    return args
