"""Records a fresh database holds, with the real controller's ids.

The config-type schemas are written here from the documented constraints of
each type (they are the project's own, not copies).
"""

from __future__ import annotations

from controller.store.db import Store

PORT = {"type": "integer", "minimum": 0, "maximum": 65535}
PROTOCOL = {"type": "string", "enum": ["tcp", "udp"]}
PROTOCOLS = {"type": "array", "items": PROTOCOL, "minItems": 1, "uniqueItems": True}
ADDRESSES = {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1, "uniqueItems": True}
PORT_RANGE = {
    "type": "object",
    "properties": {"low": PORT, "high": PORT},
    "required": ["low", "high"],
    "additionalProperties": False,
}
PORT_RANGES = {"type": "array", "items": PORT_RANGE, "minItems": 1, "uniqueItems": True}
DURATION = {"type": "string", "pattern": r"^[0-9]+(ms|s|m|h)$"}
PORT_CHECK = {
    "type": "object",
    "properties": {
        "address": {"type": "string"},
        "interval": DURATION,
        "timeout": DURATION,
        "actions": {"type": "array"},
    },
    "required": ["address", "interval", "timeout"],
}
HTTP_CHECK = {
    "type": "object",
    "properties": {
        "url": {"type": "string"},
        "method": {"type": "string"},
        "body": {"type": "string"},
        "expectStatus": {"type": "integer"},
        "expectInBody": {"type": "string"},
        "interval": DURATION,
        "timeout": DURATION,
        "actions": {"type": "array"},
    },
    "required": ["url", "interval", "timeout"],
}
LISTEN_OPTIONS = {
    "type": "object",
    "properties": {
        "bindUsingEdgeIdentity": {"type": "boolean"},
        "connectTimeoutSeconds": {"type": "integer", "minimum": 0},
        "connectTimeout": DURATION,
        "cost": PORT,
        "identity": {"type": "string"},
        "maxConnections": {"type": "integer", "minimum": 1},
        "precedence": {"type": "string", "enum": ["default", "required", "failed"]},
    },
}

TUNNELER_CLIENT_V1 = {
    "type": "object",
    "properties": {"hostname": {"type": "string"}, "port": PORT},
    "required": ["hostname", "port"],
    "additionalProperties": False,
}
TUNNELER_SERVER_V1 = {
    "type": "object",
    "properties": {
        "hostname": {"type": "string"},
        "port": PORT,
        "protocol": PROTOCOL,
        "portChecks": {"type": "array", "items": PORT_CHECK},
        "httpChecks": {"type": "array", "items": HTTP_CHECK},
    },
    "required": ["hostname", "port"],
    "additionalProperties": False,
}
INTERCEPT_V1 = {
    "type": "object",
    "properties": {
        "protocols": PROTOCOLS,
        "addresses": ADDRESSES,
        "portRanges": PORT_RANGES,
        "dialOptions": {
            "type": "object",
            "properties": {"identity": {"type": "string"}, "connectTimeoutSeconds": {"type": "integer", "minimum": 0}},
        },
        "sourceIp": {"type": "string"},
        "allowedSourceAddresses": ADDRESSES,
    },
    "required": ["protocols", "addresses", "portRanges"],
    "additionalProperties": False,
}
HOST_V1 = {
    "type": "object",
    "properties": {
        "protocol": PROTOCOL,
        "forwardProtocol": {"type": "boolean"},
        "allowedProtocols": PROTOCOLS,
        "address": {"type": "string", "minLength": 1},
        "forwardAddress": {"type": "boolean"},
        "allowedAddresses": ADDRESSES,
        "port": PORT,
        "forwardPort": {"type": "boolean"},
        "allowedPortRanges": PORT_RANGES,
        "allowedSourceAddresses": ADDRESSES,
        "listenOptions": LISTEN_OPTIONS,
        "portChecks": {"type": "array", "items": PORT_CHECK},
        "httpChecks": {"type": "array", "items": HTTP_CHECK},
    },
    "allOf": [
        {"anyOf": [{"required": ["protocol"]}, {"required": ["forwardProtocol", "allowedProtocols"]}]},
        {"anyOf": [{"required": ["address"]}, {"required": ["forwardAddress", "allowedAddresses"]}]},
        {"anyOf": [{"required": ["port"]}, {"required": ["forwardPort", "allowedPortRanges"]}]},
    ],
    "additionalProperties": False,
}
HOST_V2 = {
    "type": "object",
    "properties": {"terminators": {"type": "array", "items": HOST_V1, "minItems": 1}},
    "required": ["terminators"],
    "additionalProperties": False,
}
INTERFACES_V1 = {
    "type": "object",
    "properties": {"interfaces": {"type": "array", "items": {"type": "string"}}},
    "required": ["interfaces"],
    "additionalProperties": False,
}
PROXY_V1 = {
    "type": "object",
    "properties": {
        "port": {"type": "integer", "minimum": 1, "maximum": 65535},
        "protocols": PROTOCOLS,
        "binding": {"type": "string"},
    },
    "required": ["port", "protocols"],
    "additionalProperties": False,
}
ROUTER_LINK_V1 = {
    "type": "object",
    "properties": {
        "linkListeners": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "bind": {"type": "string"},
                    "advertise": {"type": "string"},
                    "groups": {"type": "array", "items": {"type": "string"}},
                },
            },
        }
    },
}

CONFIG_TYPES = [
    ("f2dd2df0-9c04-4b84-a91e-71437ac229f1", "ziti-tunneler-client.v1", "service", TUNNELER_CLIENT_V1),
    ("cea49285-6c07-42cf-9f52-09a9b115c783", "ziti-tunneler-server.v1", "service", TUNNELER_SERVER_V1),
    ("g7cIWbcGg", "intercept.v1", "service", INTERCEPT_V1),
    ("NH5p4FpGR", "host.v1", "service", HOST_V1),
    ("host.v2", "host.v2", "service", HOST_V2),
    ("interfaces.v1", "interfaces.v1", "service", INTERFACES_V1),
    ("proxy.v1", "proxy.v1", "service", PROXY_V1),
    ("router.link.v1", "router.link.v1", "router", ROUTER_LINK_V1),
]

_DESKTOP = ["Windows", "macOS", "Linux"]
POSTURE_CHECK_TYPES = [
    (
        "OS",
        "Operating System Check",
        [
            ("Windows", ["Vista", "7", "8", "10", "2000"]),
            ("Linux", ["4.14", "4.19", "5.4", "5.9"]),
            ("Android", ["9", "10", "11"]),
            ("macOS", ["10.15", "11.0"]),
            ("iOS", ["11", "12"]),
        ],
    ),
    ("PROCESS", "Process Check", [(os_type, []) for os_type in _DESKTOP]),
    ("DOMAIN", "Windows Domain Check", [("Windows", [])]),
    ("MAC", "MAC Address Check", [(os_type, []) for os_type in ("Windows", "Linux", "macOS", "Android")]),
    ("PROCESS_MULTI", "Process Multi Check", [(os_type, []) for os_type in _DESKTOP]),
]


def bootstrap_builtins(store: Store, now: str) -> None:
    """Insert the built-in config types and posture check types once (``now``: their timestamps)."""
    with store.lock, store.transaction():
        for type_id, name, target, schema in CONFIG_TYPES:
            if store.get("config_types", type_id) is None:
                store.insert(
                    "config_types",
                    type_id,
                    {
                        "id": type_id,
                        "name": name,
                        "target": target,
                        "schema": schema,
                        "created_at": now,
                        "updated_at": now,
                        "tags": {},
                        "is_system": True,
                    },
                )
        for type_id, name, systems in POSTURE_CHECK_TYPES:
            if store.get("posture_check_types", type_id) is None:
                store.insert(
                    "posture_check_types",
                    type_id,
                    {
                        "id": type_id,
                        "name": name,
                        "version": "1",
                        "created_at": now,
                        "updated_at": now,
                        "tags": {},
                        "operating_systems": [{"type": os_type, "versions": versions} for os_type, versions in systems],
                    },
                )
