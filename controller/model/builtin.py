"""Records a fresh database holds, with the real controller's ids.

The config-type schemas are written here in the shapes the real ones have (see the note below).
"""

from __future__ import annotations

from controller.store.db import Store

# The shapes follow the config types OpenZiti v2.0.3 installs (controller/db/migration_initialize.go): the
# same properties, required fields and ``definitions``, and optional arrays as ``allOf`` of an inhabited set and
# their items with no top-level ``type``. That matters to the Admin Console, whose editor sends every property
# declared ``type: array`` as ``[]`` when it is empty (docs/real-clients.md).


def ref(name: str) -> dict:
    return {"$ref": f"#/definitions/{name}"}


def inhabited_set_of(item: str) -> dict:
    """An optional array that, when present, holds at least one item, each unique (no top-level ``type``)."""
    return {"allOf": [ref("inhabitedSet"), {"items": ref(item)}]}


UINT16 = {"type": "integer", "minimum": 0, "maximum": 65535}
HEALTH_CHECK_DEFINITIONS = {
    "duration": {"type": "string", "pattern": "[0-9]+(h|m|s|ms)"},
    "method": {"type": "string", "enum": ["GET", "POST", "PUT", "PATCH"]},
    "action": {
        "type": "object",
        "additionalProperties": False,
        "required": ["trigger", "action"],
        "properties": {
            "trigger": {"type": "string", "enum": ["fail", "pass", "change"]},
            "consecutiveEvents": UINT16,
            "duration": ref("duration"),
            "action": {
                "type": "string",
                "pattern": "(mark (un)?healthy|increase cost [0-9]+|decrease cost [0-9]+|send event)",
            },
        },
    },
    "actionList": {"type": "array", "items": ref("action"), "minItems": 1, "maxItems": 20},
    "portCheck": {
        "type": "object",
        "additionalProperties": False,
        "required": ["interval", "timeout", "address"],
        "properties": {
            "interval": ref("duration"),
            "timeout": ref("duration"),
            "address": {"type": "string"},
            "actions": ref("actionList"),
        },
    },
    "httpCheck": {
        "type": "object",
        "additionalProperties": False,
        "required": ["interval", "timeout", "url"],
        "properties": {
            "url": {"type": "string"},
            "method": ref("method"),
            "body": {"type": "string"},
            "interval": ref("duration"),
            "timeout": ref("duration"),
            "actions": ref("actionList"),
            "expectStatus": {"type": "integer", "minimum": 100, "maximum": 599},
            "expectInBody": {"type": "string"},
        },
    },
    "portCheckList": {"type": "array", "items": ref("portCheck")},
    "httpCheckList": {"type": "array", "items": ref("httpCheck")},
}
HEALTH_CHECK_PROPERTIES = {"portChecks": ref("portCheckList"), "httpChecks": ref("httpCheckList")}

# an address: any non-empty string (``idn-hostname`` is a format the real validator does not check, see validation.py)
ADDRESS = {"type": "string", "format": "idn-hostname", "not": {"pattern": "^$"}}
TUNNEL_DEFINITIONS = {
    "dialAddress": ADDRESS,
    "listenAddress": ADDRESS,
    "inhabitedSet": {"type": "array", "minItems": 1, "uniqueItems": True},
    "portNumber": UINT16,
    "portRange": {
        "type": "object",
        "additionalProperties": False,
        "properties": {"low": ref("portNumber"), "high": ref("portNumber")},
        "required": ["low", "high"],
    },
    "protocolName": {"type": "string", "enum": ["tcp", "udp"]},
    "timeoutSeconds": {"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
    "proxyType": {"type": "string", "enum": ["http"]},
    "proxyConfiguration": {
        "type": "object",
        "required": ["type", "address"],
        "properties": {"type": ref("proxyType"), "address": {"type": "string"}},
    },
    "ipv4AddressTranslation": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "from": {"type": "string", "format": "ipv4"},
            "to": {"type": "string", "format": "ipv4"},
            "prefixLength": {"type": "integer", "minimum": 0, "maximum": 32},
        },
    },
    "ipv6AddressTranslation": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "from": {"type": "string", "format": "ipv6"},
            "to": {"type": "string", "format": "ipv6"},
            "prefixLength": {"type": "integer", "minimum": 0, "maximum": 128},
        },
    },
    "addressTranslation": {"oneOf": [ref("ipv4AddressTranslation"), ref("ipv6AddressTranslation")]},
}


def _forward_or(flag: str, allowed: str, fixed: str) -> dict:
    """``flag: true`` needs ``allowed``; otherwise ``fixed`` is required."""
    return {
        "if": {"properties": {flag: {"const": True}}, "required": [flag]},
        "then": {"required": [allowed]},
        "else": {"required": [fixed]},
    }


TRUE_ONLY = {"type": "boolean", "enum": [True]}
HOST_TERMINATOR = {
    "type": "object",
    "properties": {
        **HEALTH_CHECK_PROPERTIES,
        "protocol": ref("protocolName"),
        "forwardProtocol": TRUE_ONLY,
        "allowedProtocols": inhabited_set_of("protocolName"),
        "address": ref("dialAddress"),
        "forwardAddress": TRUE_ONLY,
        "allowedAddresses": inhabited_set_of("listenAddress"),
        "forwardAddressTranslations": inhabited_set_of("addressTranslation"),
        "port": ref("portNumber"),
        "forwardPort": TRUE_ONLY,
        "allowedPortRanges": inhabited_set_of("portRange"),
        "allowedSourceAddresses": inhabited_set_of("listenAddress"),
        "proxy": ref("proxyConfiguration"),
        "listenOptions": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "connectTimeoutSeconds": {**ref("timeoutSeconds"), "deprecated": True},
                "connectTimeout": ref("duration"),
                "maxConnections": {"type": "integer", "minimum": 1},
                "identity": {"type": "string"},
                "bindUsingEdgeIdentity": {"type": "boolean"},
                "cost": UINT16,
                "precedence": {"type": "string", "enum": ["default", "required", "failed"]},
            },
        },
    },
    "additionalProperties": False,
    "allOf": [
        _forward_or("forwardProtocol", "allowedProtocols", "protocol"),
        _forward_or("forwardAddress", "allowedAddresses", "address"),
        _forward_or("forwardPort", "allowedPortRanges", "port"),
    ],
}
HOST_DEFINITIONS = {**HEALTH_CHECK_DEFINITIONS, **TUNNEL_DEFINITIONS}

TUNNELER_CLIENT_V1 = {
    "$id": "http://edge.openziti.org/schemas/ziti-tunneler-client.v1.config.json",
    "type": "object",
    "additionalProperties": False,
    "required": ["hostname", "port"],
    "properties": {"hostname": {"type": "string"}, "port": UINT16},
}
TUNNELER_SERVER_V1 = {
    "$id": "http://edge.openziti.org/schemas/ziti-tunneler-server.v1.config.json",
    "type": "object",
    "additionalProperties": False,
    "definitions": HEALTH_CHECK_DEFINITIONS,
    "required": ["hostname", "port"],
    "properties": {
        "protocol": {"type": ["string", "null"], "enum": ["tcp", "udp"]},
        "hostname": {"type": "string"},
        "port": UINT16,
        **HEALTH_CHECK_PROPERTIES,
    },
}
INTERCEPT_V1 = {
    "$id": "http://edge.openziti.org/schemas/intercept.v1.config.json",
    "type": "object",
    "additionalProperties": False,
    "definitions": TUNNEL_DEFINITIONS,
    "properties": {
        "protocols": inhabited_set_of("protocolName"),
        "addresses": inhabited_set_of("listenAddress"),
        "portRanges": inhabited_set_of("portRange"),
        "dialOptions": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"identity": {"type": "string"}, "connectTimeoutSeconds": ref("timeoutSeconds")},
        },
        "sourceIp": {"type": "string"},
        "allowedSourceAddresses": inhabited_set_of("listenAddress"),
    },
    "required": ["protocols", "addresses", "portRanges"],
}
HOST_V1 = {
    "$id": "http://ziti-edge.netfoundry.io/schemas/host.v1.schema.json",
    "definitions": HOST_DEFINITIONS,
    **HOST_TERMINATOR,
}
HOST_V2 = {
    "$id": "http://ziti-edge.netfoundry.io/schemas/host.v2.schema.json",
    "definitions": {
        **HOST_DEFINITIONS,
        "terminator": HOST_TERMINATOR,
        "terminatorList": {"type": "array", "minItems": 1, "items": ref("terminator")},
    },
    "type": "object",
    "properties": {"terminators": ref("terminatorList")},
    "required": ["terminators"],
    "additionalProperties": False,
}
INTERFACES_V1 = {
    "$id": "https://netfoundry.io/schemas/interfaces.v1.config.json",
    "type": "object",
    "additionalProperties": False,
    "definitions": HEALTH_CHECK_DEFINITIONS,
    "required": ["interfaces"],
    "properties": {"interfaces": {"type": "array", "items": {"type": "string"}}},
}
PROXY_V1 = {
    "$id": "https://netfoundry.io/schemas/proxy.v1.config.json",
    "type": "object",
    "additionalProperties": False,
    "definitions": {"protocol": {"type": "string", "enum": ["tcp", "udp"]}},
    "required": ["port", "protocols"],
    "properties": {
        "port": {"type": "number", "minimum": 1, "maximum": 65535},
        "protocols": {"type": "array", "minItems": 1, "items": ref("protocol")},
        "binding": {"type": "string"},
    },
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
            existing = store.get("config_types", type_id)
            if existing is not None and existing.get("is_system") and existing.get("schema") != schema:
                # a database made by an earlier release: its built-in types take this release's schema
                store.put("config_types", type_id, {**existing, "schema": schema, "updated_at": now})
            if existing is None:
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
