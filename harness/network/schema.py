"""The JSON Schema of a network file, derived by ``harness.network.check.derive_network_schema``.

Written by ``python -m harness.network.opgen``; tests/unit/test_netcheck.py fails when the route table's
request schemas or the kinds say otherwise. Do not edit.
"""

SCHEMA = {
    "type": ["object", "null"],
    "additionalProperties": False,
    "properties": {
        "configTypes": {
            "type": ["array", "null"],
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "tags": {
                        "type": ["object", "null"],
                        "additionalProperties": {"type": ["string", "boolean", "number", "null"]},
                    },
                    "schema": {"type": ["object", "null"]},
                    "target": {"type": ["string", "null"], "enum": ["service", "router", "other", None]},
                },
                "required": ["name"],
                "additionalProperties": False,
            },
        },
        "configs": {
            "type": ["array", "null"],
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "tags": {
                        "type": ["object", "null"],
                        "additionalProperties": {"type": ["string", "boolean", "number", "null"]},
                    },
                    "data": {"type": "object"},
                    "configType": {"type": "string"},
                },
                "required": ["name"],
                "additionalProperties": False,
            },
        },
        "authPolicies": {
            "type": ["array", "null"],
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "tags": {
                        "type": ["object", "null"],
                        "additionalProperties": {"type": ["string", "boolean", "number", "null"]},
                    },
                    "primary": {
                        "type": "object",
                        "properties": {
                            "cert": {
                                "type": "object",
                                "properties": {
                                    "allowExpiredCerts": {"type": "boolean"},
                                    "allowed": {"type": "boolean"},
                                },
                                "required": ["allowed", "allowExpiredCerts"],
                            },
                            "extJwt": {
                                "type": "object",
                                "properties": {
                                    "allowed": {"type": "boolean"},
                                    "allowedSigners": {"type": ["array", "null"], "items": {"type": "string"}},
                                },
                                "required": ["allowed", "allowedSigners"],
                            },
                            "updb": {
                                "type": "object",
                                "properties": {
                                    "allowed": {"type": "boolean"},
                                    "lockoutDurationMinutes": {"type": "integer"},
                                    "maxAttempts": {"type": "integer"},
                                    "minPasswordLength": {"type": "integer"},
                                    "requireMixedCase": {"type": "boolean"},
                                    "requireNumberChar": {"type": "boolean"},
                                    "requireSpecialChar": {"type": "boolean"},
                                },
                                "required": [
                                    "allowed",
                                    "minPasswordLength",
                                    "requireSpecialChar",
                                    "requireNumberChar",
                                    "requireMixedCase",
                                    "maxAttempts",
                                    "lockoutDurationMinutes",
                                ],
                            },
                        },
                        "required": ["updb", "cert", "extJwt"],
                    },
                    "secondary": {
                        "type": "object",
                        "properties": {
                            "requireExtJwtSigner": {"type": ["string", "null"]},
                            "requireTotp": {"type": "boolean"},
                        },
                        "required": ["requireTotp"],
                    },
                },
                "required": ["name"],
                "additionalProperties": False,
            },
        },
        "externalJwtSigners": {
            "type": ["array", "null"],
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "tags": {
                        "type": ["object", "null"],
                        "additionalProperties": {"type": ["string", "boolean", "number", "null"]},
                    },
                    "certPem": {"type": ["string", "null"]},
                    "jwksEndpoint": {"type": ["string", "null"]},
                    "kid": {"type": ["string", "null"]},
                    "issuer": {"type": "string"},
                    "audience": {"type": ["string", "null"]},
                    "claimsProperty": {"type": ["string", "null"]},
                    "useExternalId": {"type": ["boolean", "null"]},
                    "targetToken": {"type": ["string", "null"], "enum": ["ACCESS", "ID", None]},
                    "enabled": {"type": "boolean"},
                    "clientId": {"type": ["string", "null"]},
                    "scopes": {"type": ["array", "null"], "items": {"type": "string"}},
                    "externalAuthUrl": {"type": ["string", "null"]},
                },
                "required": ["name"],
                "additionalProperties": False,
            },
        },
        "cas": {
            "type": ["array", "null"],
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "tags": {
                        "type": ["object", "null"],
                        "additionalProperties": {"type": ["string", "boolean", "number", "null"]},
                    },
                    "certPem": {"type": "string"},
                    "isAuthEnabled": {"type": "boolean"},
                    "isAutoCaEnrollmentEnabled": {"type": "boolean"},
                    "isOttCaEnrollmentEnabled": {"type": "boolean"},
                    "identityRoles": {"type": ["array", "null"], "items": {"type": "string"}},
                    "identityNameFormat": {"type": "string"},
                    "externalIdClaim": {
                        "type": ["object", "null"],
                        "properties": {
                            "index": {"type": ["integer", "null"]},
                            "location": {
                                "type": ["string", "null"],
                                "enum": ["COMMON_NAME", "SAN_URI", "SAN_EMAIL", None],
                            },
                            "matcher": {
                                "type": ["string", "null"],
                                "enum": ["ALL", "PREFIX", "SUFFIX", "SCHEME", None],
                            },
                            "matcherCriteria": {"type": ["string", "null"]},
                            "parser": {"type": ["string", "null"], "enum": ["NONE", "SPLIT", None]},
                            "parserCriteria": {"type": ["string", "null"]},
                        },
                        "required": ["location", "matcher", "matcherCriteria", "parser", "parserCriteria", "index"],
                    },
                },
                "required": ["name"],
                "additionalProperties": False,
            },
        },
        "postureChecks": {
            "type": ["array", "null"],
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "tags": {
                        "type": ["object", "null"],
                        "additionalProperties": {"type": ["string", "boolean", "number", "null"]},
                    },
                    "typeId": {"type": "string", "enum": ["OS", "PROCESS", "DOMAIN", "MAC", "MFA", "PROCESS_MULTI"]},
                    "roleAttributes": {"type": ["array", "null"], "items": {"type": "string"}},
                    "domains": {"type": ["array", "object", "string", "integer", "boolean", "null"]},
                    "operatingSystems": {"type": ["array", "object", "string", "integer", "boolean", "null"]},
                    "process": {"type": ["array", "object", "string", "integer", "boolean", "null"]},
                    "processes": {"type": ["array", "object", "string", "integer", "boolean", "null"]},
                    "macAddresses": {"type": ["array", "object", "string", "integer", "boolean", "null"]},
                    "semantic": {"type": "string", "enum": ["AllOf", "AnyOf"]},
                    "timeoutSeconds": {"type": ["array", "object", "string", "integer", "boolean", "null"]},
                    "promptOnWake": {"type": ["array", "object", "string", "integer", "boolean", "null"]},
                    "promptOnUnlock": {"type": ["array", "object", "string", "integer", "boolean", "null"]},
                    "ignoreLegacyEndpoints": {"type": ["array", "object", "string", "integer", "boolean", "null"]},
                },
                "required": ["name"],
                "additionalProperties": False,
            },
        },
        "services": {
            "type": ["array", "null"],
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "tags": {
                        "type": ["object", "null"],
                        "additionalProperties": {"type": ["string", "boolean", "number", "null"]},
                    },
                    "roleAttributes": {"type": ["array", "null"], "items": {"type": "string"}},
                    "terminatorStrategy": {"type": ["string", "null"]},
                    "maxIdleTimeMillis": {"type": ["integer", "null"], "minimum": 0},
                    "encryptionRequired": {"type": "boolean"},
                    "configs": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["name"],
                "additionalProperties": False,
            },
        },
        "edgeRouters": {
            "type": ["array", "null"],
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "tags": {
                        "type": ["object", "null"],
                        "additionalProperties": {"type": ["string", "boolean", "number", "null"]},
                    },
                    "roleAttributes": {"type": ["array", "null"], "items": {"type": "string"}},
                    "isTunnelerEnabled": {"type": ["boolean", "null"]},
                    "cost": {"type": ["integer", "null"], "minimum": 0, "maximum": 65535},
                    "noTraversal": {"type": ["boolean", "null"]},
                    "disabled": {"type": ["boolean", "null"]},
                    "appData": {
                        "type": ["object", "null"],
                        "additionalProperties": {"type": ["string", "boolean", "number", "null"]},
                    },
                    "process": {"type": "boolean"},
                    "links": {"type": "array", "items": {"type": "string", "minLength": 1}},
                },
                "required": ["name"],
                "additionalProperties": False,
            },
        },
        "routers": {
            "type": ["array", "null"],
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "tags": {
                        "type": ["object", "null"],
                        "additionalProperties": {"type": ["string", "boolean", "number", "null"]},
                    },
                    "cost": {"type": ["integer", "null"], "minimum": 0, "maximum": 65535},
                    "noTraversal": {"type": ["boolean", "null"]},
                    "disabled": {"type": ["boolean", "null"]},
                },
                "required": ["name"],
                "additionalProperties": False,
            },
        },
        "identities": {
            "type": ["array", "null"],
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "tags": {
                        "type": ["object", "null"],
                        "additionalProperties": {"type": ["string", "boolean", "number", "null"]},
                    },
                    "type": {"type": "string", "enum": ["User", "Device", "Service", "Router", "Default"]},
                    "isAdmin": {"type": "boolean"},
                    "roleAttributes": {"type": ["array", "null"], "items": {"type": "string"}},
                    "externalId": {"type": ["string", "null"]},
                    "appData": {"type": ["object", "null"]},
                    "defaultHostingCost": {"type": ["integer", "null"], "minimum": 0, "maximum": 65535},
                    "defaultHostingPrecedence": {
                        "type": ["string", "null"],
                        "enum": ["default", "required", "failed", "", None],
                    },
                    "serviceHostingCosts": {
                        "type": ["object", "null"],
                        "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 65535},
                    },
                    "serviceHostingPrecedences": {
                        "type": ["object", "null"],
                        "additionalProperties": {"type": "string", "enum": ["default", "required", "failed"]},
                    },
                    "enrollment": {
                        "type": ["object", "null"],
                        "properties": {
                            "ott": {"type": ["boolean", "null"]},
                            "ottca": {"type": ["string", "null"]},
                            "updb": {"type": ["string", "null"]},
                        },
                    },
                    "authPolicy": {"type": "string"},
                    "password": {"type": "string", "minLength": 5, "maxLength": 100},
                    "username": {"type": "string", "minLength": 4, "maxLength": 100},
                },
                "required": ["name"],
                "additionalProperties": False,
            },
        },
        "servicePolicies": {
            "type": ["array", "null"],
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "tags": {
                        "type": ["object", "null"],
                        "additionalProperties": {"type": ["string", "boolean", "number", "null"]},
                    },
                    "type": {"type": "string", "enum": ["Dial", "Bind"]},
                    "semantic": {"type": "string", "enum": ["AllOf", "AnyOf"]},
                    "identityRoles": {"type": "array", "items": {"type": "string"}},
                    "serviceRoles": {"type": "array", "items": {"type": "string"}},
                    "postureCheckRoles": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["name"],
                "additionalProperties": False,
            },
        },
        "edgeRouterPolicies": {
            "type": ["array", "null"],
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "tags": {
                        "type": ["object", "null"],
                        "additionalProperties": {"type": ["string", "boolean", "number", "null"]},
                    },
                    "semantic": {"type": "string", "enum": ["AllOf", "AnyOf"]},
                    "identityRoles": {"type": "array", "items": {"type": "string"}},
                    "edgeRouterRoles": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["name"],
                "additionalProperties": False,
            },
        },
        "serviceEdgeRouterPolicies": {
            "type": ["array", "null"],
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "tags": {
                        "type": ["object", "null"],
                        "additionalProperties": {"type": ["string", "boolean", "number", "null"]},
                    },
                    "semantic": {"type": "string", "enum": ["AllOf", "AnyOf"]},
                    "serviceRoles": {"type": "array", "items": {"type": "string"}},
                    "edgeRouterRoles": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["name"],
                "additionalProperties": False,
            },
        },
        "tests": {"type": ["array", "null"]},
        "controllers": {"type": ["integer", "null"], "minimum": 1, "maximum": 7},
    },
}
