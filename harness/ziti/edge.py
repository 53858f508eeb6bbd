"""``ziti edge create|update|delete|list``: the entities SDK suites and quickstart users touch.

Each create builds the body the real command sends (names in ``@role`` and
``--configs`` resolved to ids), prints ``New <kind> <name> created with id: <id>``
(or only the id, or with ``-j`` the controller's JSON answer, as the real one
does per kind); updates PATCH only what was given; ``list KIND [FILTER]`` prints
the real command's table and paging line, ``-j`` the JSON answer.
"""

from __future__ import annotations

import json
from pathlib import Path

from controller.console import FAILED, USAGE, CliError
from harness.ziti import table
from harness.ziti.common import (
    add_common,
    add_tags,
    bool_flag,
    print_json,
    resolve,
    role_ids,
    send,
    slices,
    string_map,
    tags_of,
    writable,
)
from harness.ziti.session import saved_client

# -- kinds -------------------------------------------------------------------------

#: CLI name -> (collection path, label in "New <label> ... created", aliases)
KINDS = {
    "identity": ("identities", "identity", ("identities",)),
    "service": ("services", "service", ("services",)),
    "config": ("configs", "config", ("configs",)),
    "config-type": ("config-types", "config type", ("config-types",)),
    "service-policy": ("service-policies", "service policy", ("service-policies", "sp", "sps")),
    "edge-router-policy": ("edge-router-policies", "edge router policy", ("edge-router-policies", "erp", "erps")),
    "service-edge-router-policy": (
        "service-edge-router-policies",
        "service edge router policy",
        ("service-edge-router-policies", "serp", "serps"),
    ),
    "edge-router": ("edge-routers", "edge router", ("edge-routers", "er", "ers")),
    "auth-policy": ("auth-policies", "auth policy", ("auth-policies",)),
    "ca": ("cas", "CA", ("cas",)),
    "ext-jwt-signer": (
        "external-jwt-signers",
        "external jwt signer",
        ("ext-jwt-signers", "external-jwt-signer", "external-jwt-signers"),
    ),
    "posture-check": ("posture-checks", "posture check", ("posture-checks",)),
    "terminator": ("terminators", "terminator", ("terminators",)),
    "api-session": ("api-sessions", "api session", ("api-sessions",)),
    "session": ("sessions", "session", ("sessions",)),
    "enrollment": ("enrollments", "enrollment", ("enrollments",)),
    "authenticator": ("authenticators", "authenticator", ("authenticators",)),
}


def kind_of(word: str) -> str:
    for name, (_, _, aliases) in KINDS.items():
        if word == name or word in aliases:
            return name
    raise CliError(f"unknown entity type {word!r}; one of: {', '.join(sorted(KINDS))}", USAGE)


def _created(args, response, label: str, name: str, *, id_only: bool = False) -> str:
    data = response.json()["data"]
    if args.output_json:
        print_json(response)
    elif id_only:
        print(data["id"])
    else:
        print(f"New {label} {name} created with id: {data['id']}")
    return data["id"]


def _set(body: dict, key: str, value) -> None:
    if value is not None:
        body[key] = value


# -- create ------------------------------------------------------------------------


def create_identity(args, client) -> int:
    if len(args.names) > 2 or (len(args.names) == 2 and args.names[0] not in ("device", "user", "service")):
        raise CliError(f"create identity takes one name, got {len(args.names)}: {' '.join(args.names)}", USAGE)
    name = args.names[-1]
    kind = args.names[0].title() if len(args.names) == 2 else args.type  # the older `identity user NAME` form
    body = {"name": name, "type": kind, "isAdmin": bool(args.admin)}
    username = (args.updb or "").strip()
    body["enrollment"] = {"updb": username} if username else {"ott": True}
    body["roleAttributes"] = slices(args.role_attributes) or []
    _set(body, "externalId", args.external_id or None)
    _set(body, "appData", string_map(args.app_data) if args.app_data else None)
    if args.default_hosting_precedence:
        body["defaultHostingPrecedence"] = _precedence(args.default_hosting_precedence)
    body["defaultHostingCost"] = args.default_hosting_cost
    body["authPolicyId"] = resolve(client, "auth-policies", args.auth_policy)
    _set(body, "tags", tags_of(args))
    identity_id = _created(args, send(client, "POST", "/identities", body), "identity", name)
    if args.jwt_output_file:
        detail = client.mgmt_ok("GET", f"/identities/{identity_id}")
        enrollment = (detail.get("enrollment") or {}).get("updb" if username else "ott") or {}
        if not enrollment.get("jwt"):
            raise CliError("enrollment JWT not present for new identity", FAILED)
        _write_private(args.jwt_output_file, enrollment["jwt"])
        if not username and enrollment.get("expiresAt"):
            print(f"Enrollment expires at {enrollment['expiresAt']}")
    return 0


def _precedence(value: str) -> str:
    lowered = value.lower()
    if lowered not in ("default", "required", "failed"):
        raise CliError(f"invalid precedence {value!r}: one of default, required, failed", USAGE)
    return lowered


def _write_private(path: str, text: str) -> None:
    import os

    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(text)


def _config_ids(client, configs) -> list[str]:
    return [resolve(client, "configs", c) for c in slices(configs) or []]


def _encryption(value: str | None) -> bool | None:
    if value is None:
        return None
    lowered = value.strip().lower()
    if lowered in ("on", "true"):
        return True
    if lowered in ("off", "false"):
        return False
    raise CliError(f"invalid --encryption {value!r}: ON or OFF", USAGE)


def create_service(args, client) -> int:
    body = {
        "name": args.name,
        "encryptionRequired": _encryption(args.encryption or "ON"),
        "roleAttributes": slices(args.role_attributes) or [],
        "configs": _config_ids(client, args.configs),
        "maxIdleTimeMillis": _millis(args.max_idle_time),
    }
    _set(body, "terminatorStrategy", args.terminator_strategy or None)
    _set(body, "tags", tags_of(args))
    _created(args, send(client, "POST", "/services", body), "service", args.name)
    return 0


def _millis(text: str | None) -> int:
    """A Go duration (``90s``, ``5m``, ``1h30m``, ``250ms``) in milliseconds."""
    if not text:
        return 0
    import re

    units = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise CliError(f"invalid duration {text!r} (e.g. 90s, 5m, 1h)", USAGE)
    return int(sum(float(n) * units[u] for n, u in parts))


def _json_arg(text: str | None, file: str | None, what: str) -> dict:
    if file:
        text = Path(file).read_text()
    if text is None:
        raise CliError(f"{what} is required (as an argument or with -f FILE)", USAGE)
    try:
        return json.loads(text)
    except ValueError as ex:
        raise CliError(f"{what} is not valid JSON: {ex}", USAGE) from ex


def create_config(args, client) -> int:
    body = {
        "name": args.name,
        "configTypeId": resolve(client, "config-types", args.config_type),
        "data": _json_arg(args.data, args.json_file, "the config data"),
    }
    _set(body, "tags", tags_of(args))
    _created(args, send(client, "POST", "/configs", body), "config", args.name)
    return 0


def create_config_type(args, client) -> int:
    body = {"name": args.name}
    if args.schema_file:
        body["schema"] = _json_arg(None, args.schema_file, "the schema")
    _set(body, "tags", tags_of(args))
    _created(args, send(client, "POST", "/config-types", body), "config type", args.name)
    return 0


def create_service_policy(args, client) -> int:
    if args.type not in ("Bind", "Dial"):
        raise CliError(f"Invalid policy type '{args.type}'. Valid values: [Bind, Dial]", USAGE)
    body = {
        "name": args.name,
        "type": args.type,
        "serviceRoles": role_ids(client, slices(args.service_roles) or [], "services"),
        "identityRoles": role_ids(client, slices(args.identity_roles) or [], "identities"),
        "postureCheckRoles": role_ids(client, slices(args.posture_check_roles) or [], "posture-checks"),
        "semantic": args.semantic or "AllOf",
    }
    _set(body, "tags", tags_of(args))
    _created(args, send(client, "POST", "/service-policies", body), "service policy", args.name)
    return 0


def create_edge_router_policy(args, client) -> int:
    body = {
        "name": args.name,
        "edgeRouterRoles": role_ids(client, slices(args.edge_router_roles) or [], "edge-routers"),
        "identityRoles": role_ids(client, slices(args.identity_roles) or [], "identities"),
        "semantic": args.semantic or "AllOf",
    }
    _set(body, "tags", tags_of(args))
    _created(args, send(client, "POST", "/edge-router-policies", body), "edge router policy", args.name)
    return 0


def create_serp(args, client) -> int:
    body = {
        "name": args.name,
        "edgeRouterRoles": role_ids(client, slices(args.edge_router_roles) or [], "edge-routers"),
        "serviceRoles": role_ids(client, slices(args.service_roles) or [], "services"),
        "semantic": args.semantic or "AllOf",
    }
    _set(body, "tags", tags_of(args))
    label = "service edge router policy"
    _created(args, send(client, "POST", "/service-edge-router-policies", body), label, args.name)
    return 0


def create_edge_router(args, client) -> int:
    body = {
        "name": args.name,
        "roleAttributes": slices(args.role_attributes) or [],
        "isTunnelerEnabled": bool(args.tunneler_enabled),
        "noTraversal": bool(args.no_traversal),
        "cost": args.cost,
    }
    _set(body, "appData", string_map(args.app_data) if args.app_data else None)
    _set(body, "tags", tags_of(args))
    router_id = _created(args, send(client, "POST", "/edge-routers", body), "edge router", args.name)
    if args.jwt_output_file:
        detail = client.mgmt_ok("GET", f"/edge-routers/{router_id}")
        token = detail.get("enrollmentJwt")
        if not token:
            raise CliError("enrollment JWT not present for new edge router", FAILED)
        _write_private(args.jwt_output_file, token)
    return 0


def _auth_policy_body(args, client, *, patch: bool) -> dict:
    def value(name, default):
        given = getattr(args, name)
        return given if given is not None or patch else default

    cert = {"allowed": value("primary_cert_allowed", False), "allowExpiredCerts": value("primary_cert_expired", False)}
    signers = slices(args.primary_ext_jwt_allowed_signers)
    ext_jwt = {
        "allowed": value("primary_ext_jwt_allowed", False),
        "allowedSigners": [resolve(client, "external-jwt-signers", s) for s in signers]
        if signers is not None
        else (None if patch else []),
    }
    updb = {
        "allowed": value("primary_updb_allowed", False),
        "requireSpecialChar": value("primary_updb_req_special", False),
        "requireNumberChar": value("primary_updb_req_numbers", False),
        "requireMixedCase": value("primary_updb_req_mixed_case", False),
        "lockoutDurationMinutes": value("primary_updb_lockout_min", 0),
        "maxAttempts": value("primary_updb_max_attempts", 0),
        "minPasswordLength": value("primary_updb_min_length", 5),
    }
    required_signer = args.secondary_req_ext_jwt_signer
    secondary = {
        "requireTotp": value("secondary_req_totp", False),
        "requireExtJwtSigner": resolve(client, "external-jwt-signers", required_signer) if required_signer else None,
    }
    body = {"primary": {"cert": cert, "extJwt": ext_jwt, "updb": updb}, "secondary": secondary}
    if patch:
        body = _prune(body)
        if args.secondary_req_ext_jwt_signer is None:
            body.get("secondary", {}).pop("requireExtJwtSigner", None)
    return body


def _prune(value):
    if isinstance(value, dict):
        pruned = {k: _prune(v) for k, v in value.items() if v is not None}
        return {k: v for k, v in pruned.items() if v != {}}
    return value


def create_auth_policy(args, client) -> int:
    body = {"name": args.name, **_auth_policy_body(args, client, patch=False)}
    _set(body, "tags", tags_of(args))
    _created(args, send(client, "POST", "/auth-policies", body), "auth policy", args.name, id_only=True)
    return 0


def create_ca(args, client) -> int:
    body = {
        "name": args.name,
        "certPem": Path(args.cert_file).read_text(),
        "isAutoCaEnrollmentEnabled": bool(args.autoca),
        "isOttCaEnrollmentEnabled": bool(args.ottca),
        "isAuthEnabled": bool(args.auth),
        "identityRoles": slices(args.identity_roles) or [],
    }
    _set(body, "identityNameFormat", args.identity_name_format)
    _set(body, "tags", tags_of(args))
    _created(args, send(client, "POST", "/cas", body), "CA", args.name)
    return 0


def _signer_body(args, client, *, patch: bool) -> dict:
    body: dict = {}
    sources = [bool(args.jwks_endpoint), bool(args.cert_pem), bool(args.cert_file)]
    if sum(sources) > 1:
        raise CliError("must specify only one certificate source (JWKS, cert file, or inline cert PEM", USAGE)
    if args.jwks_endpoint:
        body["jwksEndpoint"] = args.jwks_endpoint
    cert = Path(args.cert_file).read_text() if args.cert_file else args.cert_pem
    if cert:
        body["certPem"] = cert
    fields = {
        "audience": args.audience,
        "claimsProperty": args.claims_property,
        "externalAuthUrl": args.external_auth_url,
        "kid": args.kid,
        "clientId": args.client_id,
        "targetToken": args.target_token,
        "useExternalId": args.external_id,
        "enabled": args.enabled,
        "enrollToCertEnabled": args.enroll_to_cert,
        "enrollToTokenEnabled": args.enroll_to_token,
        "enrollNameClaimsSelector": args.enroll_name_claims_selector,
        "enrollAttributeClaimsSelector": args.enroll_attr_claims_selector,
    }
    for key, value in fields.items():
        if value not in (None, ""):
            body[key] = value
    scopes = slices(args.scopes)
    if scopes:
        body["scopes"] = scopes
    if args.enroll_auth_policy:
        body["enrollAuthPolicyId"] = resolve(client, "auth-policies", args.enroll_auth_policy)
    if not patch:
        if not args.audience:
            raise CliError("audience must be specified (--audience)", USAGE)
        body.setdefault("claimsProperty", "sub")
        body.setdefault("useExternalId", True)
        body.setdefault("enabled", True)
        if body.get("jwksEndpoint"):
            body.pop("kid", None)
    return body


def create_ext_jwt_signer(args, client) -> int:
    body = {"name": args.name, "issuer": args.issuer, **_signer_body(args, client, patch=False)}
    _set(body, "tags", tags_of(args))
    label = "external jwt signer"
    _created(args, send(client, "POST", "/external-jwt-signers", body), label, args.name, id_only=True)
    return 0


# -- update ------------------------------------------------------------------------


def _patch(client, args, collection: str, body: dict) -> int:
    if not body:
        raise CliError("no values changed: give at least one option to update", USAGE)
    entity_id = resolve(client, collection, args.name)
    response = send(client, "PATCH", f"/{collection}/{entity_id}", body)
    if args.output_json:
        print_json(response)
    return 0


def update_identity(args, client) -> int:
    body: dict = {}
    _set(body, "name", args.new_name)
    _set(body, "roleAttributes", slices(args.role_attributes))
    _set(body, "externalId", args.external_id)
    _set(body, "isAdmin", args.admin)
    if args.auth_policy:
        body["authPolicyId"] = resolve(client, "auth-policies", args.auth_policy)
    if args.default_hosting_precedence:
        body["defaultHostingPrecedence"] = _precedence(args.default_hosting_precedence)
    _set(body, "defaultHostingCost", args.default_hosting_cost)
    _set(body, "appData", string_map(args.app_data) if args.app_data else None)
    _set(body, "tags", tags_of(args))
    return _patch(client, args, "identities", body)


def update_service(args, client) -> int:
    body: dict = {}
    _set(body, "name", args.new_name)
    _set(body, "roleAttributes", slices(args.role_attributes))
    if args.configs is not None:
        body["configs"] = _config_ids(client, args.configs)
    _set(body, "terminatorStrategy", args.terminator_strategy)
    _set(body, "encryptionRequired", _encryption(args.encryption))
    if args.max_idle_time is not None:
        body["maxIdleTimeMillis"] = _millis(args.max_idle_time)
    _set(body, "tags", tags_of(args))
    return _patch(client, args, "services", body)


def update_config(args, client) -> int:
    body: dict = {}
    _set(body, "name", args.new_name)
    if args.data is not None or args.json_file:
        body["data"] = _json_arg(args.data, args.json_file, "the config data")
    _set(body, "tags", tags_of(args))
    return _patch(client, args, "configs", body)


def update_policy(collection: str, roles: dict):
    def run(args, client) -> int:
        body: dict = {}
        _set(body, "name", args.new_name)
        _set(body, "semantic", args.semantic)
        for flag, (key, target) in roles.items():
            values = getattr(args, flag)
            if values is not None:
                body[key] = role_ids(client, slices(values), target)
        _set(body, "tags", tags_of(args))
        return _patch(client, args, collection, body)

    return run


def update_edge_router(args, client) -> int:
    body: dict = {}
    _set(body, "name", args.new_name)
    _set(body, "roleAttributes", slices(args.role_attributes))
    _set(body, "isTunnelerEnabled", args.tunneler_enabled)
    _set(body, "noTraversal", args.no_traversal)
    _set(body, "cost", args.cost)
    _set(body, "tags", tags_of(args))
    return _patch(client, args, "edge-routers", body)


def update_auth_policy(args, client) -> int:
    body = _auth_policy_body(args, client, patch=True)
    _set(body, "name", args.new_name)
    _set(body, "tags", tags_of(args))
    return _patch(client, args, "auth-policies", body)


def update_ca(args, client) -> int:
    body: dict = {}
    _set(body, "name", args.new_name)
    _set(body, "isAutoCaEnrollmentEnabled", args.autoca)
    _set(body, "isOttCaEnrollmentEnabled", args.ottca)
    _set(body, "isAuthEnabled", args.auth)
    _set(body, "identityRoles", slices(args.identity_roles))
    _set(body, "identityNameFormat", args.identity_name_format)
    _set(body, "tags", tags_of(args))
    return _patch(client, args, "cas", body)


def update_ext_jwt_signer(args, client) -> int:
    body = _signer_body(args, client, patch=True)
    _set(body, "name", args.new_name)
    _set(body, "issuer", args.issuer)
    _set(body, "tags", tags_of(args))
    return _patch(client, args, "external-jwt-signers", body)


# -- delete ------------------------------------------------------------------------


def cmd_delete(args) -> int:
    """``delete KIND ID|NAME...`` or ``delete KIND where FILTER``; one ``delete of <kind> with id <id>: OK`` line each."""
    kind = kind_of(args.kind)
    collection = KINDS[kind][0]
    with saved_client(args.cli_identity, args.timeout) as client:
        writable(client)
        if args.names and args.names[0] == "where":
            if len(args.names) < 2:
                raise CliError("delete ... where needs a filter, e.g. 'name contains \"test\"'", USAGE)
            response = send(client, "GET", f"/{collection}", params={"filter": " ".join(args.names[1:])})
            found = response.json()
            targets = [e["id"] for e in found.get("data") or []]
            print("filter returned " + table.paging_line(found.get("meta"), len(targets)))
        else:
            if not args.names:
                raise CliError(f"delete {args.kind} needs one or more ids or names", USAGE)
            by_id = kind in ("terminator", "api-session", "session", "authenticator", "enrollment")
            targets = args.names if by_id else [resolve(client, collection, name) for name in args.names]
        singular = collection[:-3] + "y" if collection.endswith("ies") else collection[:-1]
        for entity_id in targets:
            try:
                send(client, "DELETE", f"/{collection}/{entity_id}")
            except Exception:
                print(f"delete of {singular} with id {entity_id}: FAIL")
                raise
            print(f"delete of {singular} with id {entity_id}: OK")
    return 0


# -- list --------------------------------------------------------------------------


def _roles(entity: dict, field: str) -> str:
    names = {d.get("role"): d.get("name") for d in entity.get(field + "Display") or []}
    return " ".join(names.get(r, r) for r in entity.get(field) or [])


def _get(entity: dict, path: str):
    for part in path.split("."):
        entity = (entity or {}).get(part) if isinstance(entity, dict) else None
    return entity


COLUMNS = {
    "identity": (
        ["ID", "Name", "Type", "Attributes", "Auth-Policy"],
        lambda e: [
            e.get("id"),
            e.get("name"),
            _get(e, "type.name"),
            ",".join(e.get("roleAttributes") or []),
            _get(e, "authPolicy.name") or e.get("authPolicyId"),
        ],
    ),
    "service": (
        ["ID", "Name", "Encryption Required", "Terminator Strategy", "Attributes"],
        lambda e: [
            e.get("id"),
            e.get("name"),
            bool(e.get("encryptionRequired")),
            e.get("terminatorStrategy"),
            "\n".join(e.get("roleAttributes") or []),
        ],
    ),
    "config": (["ID", "Name", "Config Type"], lambda e: [e.get("id"), e.get("name"), _get(e, "configType.name")]),
    "config-type": (["ID", "Name", "Schema"], lambda e: [e.get("id"), e.get("name"), ""]),
    "service-policy": (
        ["ID", "Name", "Semantic", "Service Roles", "Identity Roles", "Posture Check Roles"],
        lambda e: [
            e.get("id"),
            e.get("name"),
            e.get("semantic"),
            _roles(e, "serviceRoles"),
            _roles(e, "identityRoles"),
            _roles(e, "postureCheckRoles"),
        ],
    ),
    "edge-router-policy": (
        ["ID", "Name", "Edge Router Roles", "Identity Roles"],
        lambda e: [e.get("id"), e.get("name"), _roles(e, "edgeRouterRoles"), _roles(e, "identityRoles")],
    ),
    "service-edge-router-policy": (
        ["ID", "Name", "Service Roles", "Edge Router Roles"],
        lambda e: [e.get("id"), e.get("name"), _roles(e, "serviceRoles"), _roles(e, "edgeRouterRoles")],
    ),
    "edge-router": (
        ["ID", "Name", "Online", "Allow Transit", "Cost", "Attributes"],
        lambda e: [
            e.get("id"),
            e.get("name"),
            bool(e.get("isOnline")),
            not e.get("noTraversal"),
            e.get("cost") or 0,
            "\n".join(e.get("roleAttributes") or []),
        ],
    ),
    "auth-policy": (
        ["ID", "Name", "Cert", "UPDB", "Ext-JWT", "TOTP Required"],
        lambda e: [
            e.get("id"),
            e.get("name"),
            bool(_get(e, "primary.cert.allowed")),
            bool(_get(e, "primary.updb.allowed")),
            bool(_get(e, "primary.extJwt.allowed")),
            bool(_get(e, "secondary.requireTotp")),
        ],
    ),
    "ca": (
        ["ID", "Name", "Flags", "Token", "Fingerprint"],
        lambda e: [
            e.get("id"),
            e.get("name"),
            "["
            + "".join(
                flag
                for flag, on in (
                    ("V", e.get("isVerified")),
                    ("A", e.get("isAutoCaEnrollmentEnabled")),
                    ("O", e.get("isOttCaEnrollmentEnabled")),
                    ("E", e.get("isAuthEnabled")),
                )
                if on
            )
            + "]",
            "-" if e.get("isVerified") else e.get("verificationToken"),
            e.get("fingerprint") if e.get("isVerified") else "-",
        ],
    ),
    "ext-jwt-signer": (
        ["ID", "Name", "Issuer", "Audience", "Type", "Enabled", "Enroll To Cert", "Enroll To Token"],
        lambda e: [
            e.get("id"),
            e.get("name"),
            e.get("issuer"),
            e.get("audience"),
            "JWKS" if e.get("jwksEndpoint") else "CERT",
            bool(e.get("enabled")),
            bool(e.get("enrollToCertEnabled")),
            bool(e.get("enrollToTokenEnabled")),
        ],
    ),
    "posture-check": (
        ["ID", "Name", "Type", "Attributes"],
        lambda e: [e.get("id"), e.get("name"), e.get("typeId"), ",".join(e.get("roleAttributes") or []) or "<none>"],
    ),
    "terminator": (
        ["ID", "Service", "Router", "Binding", "Address", "Identity", "Cost", "Precedence", "Dynamic Cost"],
        lambda e: [
            e.get("id"),
            _get(e, "service.name"),
            _get(e, "router.name"),
            e.get("binding"),
            e.get("address"),
            e.get("identity"),
            e.get("cost"),
            e.get("precedence"),
            e.get("dynamicCost"),
        ],
    ),
    "api-session": (
        ["ID", "Identity Name", "Last Activity At"],
        lambda e: [e.get("id"), _get(e, "identity.name"), e.get("lastActivityAt")],
    ),
    "session": (
        ["ID", "API Session ID", "Service Name", "Type"],
        lambda e: [e.get("id"), e.get("apiSessionId"), _get(e, "service.name"), e.get("type")],
    ),
    "enrollment": (
        ["ID", "Method", "Identity Id", "Identity Name", "Expires At", "Token", "JWT"],
        lambda e: [
            e.get("id"),
            e.get("method"),
            e.get("identityId"),
            _get(e, "identity.name"),
            e.get("expiresAt"),
            "See json",
            "See json",
        ],
    ),
    "authenticator": (
        ["ID", "Method", "Identity Id", "Identity Name", "Username/Fingerprint", "Ca Id"],
        lambda e: [
            e.get("id"),
            e.get("method"),
            e.get("identityId"),
            _get(e, "identity.name"),
            e.get("username") or e.get("fingerprint"),
            e.get("caId"),
        ],
    ),
}


def cmd_list(args) -> int:
    kind = kind_of(args.kind)
    collection = KINDS[kind][0]
    params = {"filter": args.filter} if args.filter else {}
    with saved_client(args.cli_identity, args.timeout) as client:
        response = send(client, "GET", f"/{collection}", params=params)
    if args.output_json:
        print_json(response)
        return 0
    payload = response.json()
    rows = payload.get("data") or []
    headers, row_of = COLUMNS[kind]
    if args.csv:
        import csv
        import sys

        writer = csv.writer(sys.stdout)
        writer.writerow(headers)
        writer.writerows([[table.cell(v) for v in row_of(e)] for e in rows])
    else:
        print(table.render(headers, [row_of(e) for e in rows]))
    print(table.paging_line(payload.get("meta"), len(rows)))
    return 0


# -- the parsers -------------------------------------------------------------------


def _entity(sub, name: str, func, help: str, *, aliases=(), positionals=("name",)):
    parser = sub.add_parser(name, aliases=list(aliases), help=help, description=help, conflict_handler="resolve")
    for positional in positionals:
        if isinstance(positional, tuple):
            parser.add_argument(positional[0], **positional[1])
        else:
            parser.add_argument(positional)
    add_common(parser)
    add_tags(parser)
    parser.set_defaults(func=_with_client(func))
    return parser


def _with_client(func):
    def run(args) -> int:
        with saved_client(args.cli_identity, args.timeout) as client:
            return func(args, writable(client))

    return run


def _roles_flags(parser, *which: str) -> None:
    helps = {"identity": "Identity roles", "service": "Service roles", "edge-router": "Edge router roles"}
    for role in which:
        parser.add_argument(f"--{role}-roles", action="append", default=None, help=helps[role] + " of the policy")


def register_create(edge_sub) -> None:
    create = edge_sub.add_parser(
        "create", aliases=["c"], help="creates various entities managed by the Ziti Edge Controller"
    )
    sub = create.add_subparsers(dest="entity", required=True, metavar="ENTITY")

    p = _entity(
        sub,
        "identity",
        create_identity,
        "creates a new identity managed by the Ziti Edge Controller",
        positionals=(("names", {"nargs": "+", "metavar": "name"}),),
    )
    bool_flag(p, "-A", "--admin", dest="admin", help="Give the new identity admin privileges")
    p.add_argument("--updb", default=None, help="username to give the identity, will create a UPDB enrollment")
    p.add_argument("--external-id", default=None, help="an external id to give to the identity")
    p.add_argument("-a", "--role-attributes", action="append", default=None, help="Role attributes of the new identity")
    p.add_argument("-o", "--jwt-output-file", default=None, help="File to which to output the JWT used for enrolling")
    p.add_argument("-p", "--default-hosting-precedence", default=None, help="default, required or failed")
    p.add_argument("-c", "--default-hosting-cost", type=int, default=0, help="Default cost when hosting services")
    p.add_argument("--app-data", action="append", default=None, help="Custom application data (k=v)")
    p.add_argument("-P", "--auth-policy", default="default", help="The name or id of the auth policy to assign")
    p.add_argument("--type", default="Default", help=argparse_suppress())

    p = _entity(sub, "service", create_service, "creates a service managed by the Ziti Edge Controller")
    p.add_argument("-a", "--role-attributes", action="append", default=None, help="role attributes for the new service")
    p.add_argument("-c", "--configs", action="append", default=None, help="Configuration id or names to associate")
    p.add_argument("--terminator-strategy", default=None, help="Specifies the terminator strategy for the service")
    p.add_argument("--max-idle-time", default=None, help="Time after which idle circuits are terminated (e.g. 5m)")
    p.add_argument("-e", "--encryption", default=None, help="end-to-end encryption: ON (default) or OFF")

    p = _entity(
        sub,
        "config",
        create_config,
        "creates a config managed by the Ziti Edge Controller",
        positionals=("name", "config_type", ("data", {"nargs": "?", "default": None})),
    )
    p.add_argument("-f", "--json-file", default=None, help="Read config JSON from a file instead of the command line")

    p = _entity(sub, "config-type", create_config_type, "creates a config type managed by the Ziti Edge Controller")
    p.add_argument("-s", "--schema-file", default=None, help="JSON schema file of the config type")

    p = _entity(
        sub,
        "service-policy",
        create_service_policy,
        "creates a service-policy managed by the Ziti Edge Controller",
        aliases=("sp",),
        positionals=("name", "type"),
    )
    _roles_flags(p, "service", "identity")
    p.add_argument("--semantic", default="AllOf", help="AnyOf or AllOf (default AllOf)")
    p.add_argument("-p", "--posture-check-roles", action="append", default=None, help="Posture check roles")

    p = _entity(
        sub,
        "edge-router-policy",
        create_edge_router_policy,
        "creates an edge-router-policy managed by the Ziti Edge Controller",
        aliases=("erp",),
    )
    _roles_flags(p, "edge-router", "identity")
    p.add_argument("--semantic", default="AllOf", help="AnyOf or AllOf (default AllOf)")

    p = _entity(
        sub,
        "service-edge-router-policy",
        create_serp,
        "creates a service-edge-router-policy managed by the Ziti Edge Controller",
        aliases=("serp",),
    )
    _roles_flags(p, "edge-router", "service")
    p.add_argument("--semantic", default="AllOf", help="AnyOf or AllOf (default AllOf)")

    p = _entity(
        sub,
        "edge-router",
        create_edge_router,
        "creates an edge router managed by the Ziti Edge Controller",
        aliases=("er",),
    )
    p.add_argument("-o", "--jwt-output-file", default=None, help="File to which to output the enrollment JWT")
    p.add_argument("-a", "--role-attributes", action="append", default=None, help="Role attributes of the new router")
    bool_flag(p, "-t", "--tunneler-enabled", dest="tunneler_enabled", help="Can this edge router be used as a tunneler")
    bool_flag(p, "--no-traversal", dest="no_traversal", help="Disallow traversal for this edge router")
    p.add_argument("--cost", type=int, default=0, help="Specifies the router cost (default 0)")
    p.add_argument("--app-data", action="append", default=None, help="Custom application data (k=v)")

    p = _entity(sub, "auth-policy", create_auth_policy, "creates an authentication policy")
    _auth_policy_flags(p)

    p = _entity(
        sub, "ca", create_ca, "creates a CA managed by the Ziti Edge Controller", positionals=("name", "cert_file")
    )
    _ca_flags(p)

    p = _entity(
        sub,
        "ext-jwt-signer",
        create_ext_jwt_signer,
        "creates an external JWT signer managed by the Ziti Edge Controller",
        aliases=("external-jwt-signer",),
        positionals=("name", "issuer"),
    )
    _signer_flags(p, patch=False)

    from harness.ziti import posture

    posture.register_create(sub, _entity)


def argparse_suppress():
    import argparse

    return argparse.SUPPRESS


def _auth_policy_flags(p) -> None:
    bool_flag(p, "--primary-cert-allowed", dest="primary_cert_allowed", help="Enable certificate authentication")
    bool_flag(p, "--primary-cert-expired-allowed", dest="primary_cert_expired", help="Allow expired certificates")
    bool_flag(p, "--primary-ext-jwt-allowed", dest="primary_ext_jwt_allowed", help="Allow external JWT authentication")
    p.add_argument("--primary-ext-jwt-allowed-signers", action="append", default=None, help="Allow specific signers")
    bool_flag(p, "--primary-updb-allowed", dest="primary_updb_allowed", help="Allow username/password authentication")
    bool_flag(p, "--primary-updb-req-special", dest="primary_updb_req_special", help="Require special characters")
    bool_flag(p, "--primary-updb-req-numbers", dest="primary_updb_req_numbers", help="Require numbers in passwords")
    bool_flag(p, "--primary-updb-req-mixed-case", dest="primary_updb_req_mixed_case", help="Require mixed case")
    p.add_argument("--primary-updb-lockout-min", type=int, default=None, help="Lockout minutes, 0=forever")
    p.add_argument("--primary-updb-max-attempts", type=int, default=None, help="Invalid attempts, 0=unlimited")
    p.add_argument("--primary-updb-min-length", type=int, default=None, help="Minimum password length (default 5)")
    p.add_argument("--secondary-req-ext-jwt-signer", default=None, help="JWT signer required on every request")
    bool_flag(p, "--secondary-req-totp", dest="secondary_req_totp", help="MFA TOTP enrollment required")


def _ca_flags(p) -> None:
    bool_flag(p, "-a", "--autoca", dest="autoca", help="Enables auto CA enrollment")
    bool_flag(p, "-o", "--ottca", dest="ottca", help="Enables one-time-token CA enrollment")
    bool_flag(p, "-e", "--auth", dest="auth", help="Enables certificate authentication")
    p.add_argument("-r", "--identity-roles", action="append", default=None, help="Identity roles of auto-enrolled ids")
    p.add_argument("-f", "--identity-name-format", default=None, help="Naming format of auto-enrolled identities")


def _signer_flags(p, *, patch: bool) -> None:
    bool_flag(p, "-x", "--external-id", "--use-external-id", dest="external_id", help="Match identity external ids")
    bool_flag(p, "-e", "--enabled", dest="enabled", help="Enable this entity (default true)")
    p.add_argument("-u", "--jwks-endpoint", default=None, help="A valid URI for a target JWKS endpoint")
    p.add_argument("-c", "--claims-property", default=None, help="The JWT property matched to identity ids (sub)")
    p.add_argument("-a", "--audience", default=None, help="The expected audience of the incoming JWTs")
    p.add_argument("-p", "--cert-pem", default=None, help="A public certificate PEM for the signer")
    p.add_argument("-f", "--cert-file", default=None, help="A public certificate PEM file")
    p.add_argument("-y", "--external-auth-url", default=None, help="The URL that users are directed to obtain a JWT")
    p.add_argument("-k", "--kid", default=None, help="The KID for the signer, required if using -p or -f")
    p.add_argument("--client-id", default=None, help="The client id for OIDC that should be used")
    p.add_argument("--scopes", action="append", default=None, help="The scopes for OIDC that should be used")
    p.add_argument("--target-token", default=None, choices=("ACCESS", "ID"), help="ACCESS (default) or ID")
    bool_flag(p, "--enroll-to-cert", dest="enroll_to_cert", help="Allow enrollment to a certificate with a JWT")
    bool_flag(p, "--enroll-to-token", dest="enroll_to_token", help="Allow enrollment to a token-only identity")
    p.add_argument("--enroll-name-claims-selector", default=None, help="JSON pointer naming enrolled identities")
    p.add_argument("--enroll-attr-claims-selector", default=None, help="JSON pointer giving their role attributes")
    p.add_argument("--enroll-auth-policy", default=None, help="auth policy (id or name) of enrolled identities")
    if patch:
        p.add_argument("-l", "--issuer", default=None, help="The issuer for the signer")


def register_update(edge_sub) -> None:
    update = edge_sub.add_parser("update", help="updates various entities managed by the Ziti Edge Controller")
    sub = update.add_subparsers(dest="entity", required=True, metavar="ENTITY")

    def entity(name, func, *, aliases=()):
        p = _entity(sub, name, func, f"updates a {name} managed by the Ziti Edge Controller", aliases=aliases)
        p.add_argument("-n", "--name", dest="new_name", default=None, help="Set the name")
        return p

    p = entity("identity", update_identity)
    p.add_argument("-a", "--role-attributes", action="append", default=None, help="Set role attributes")
    p.add_argument("--external-id", default=None, help="Set the external id")
    bool_flag(p, "-A", "--admin", dest="admin", help="Set admin privileges")
    p.add_argument("-P", "--auth-policy", default=None, help="Set the auth policy (id or name)")
    p.add_argument("-p", "--default-hosting-precedence", default=None, help="default, required or failed")
    p.add_argument("-c", "--default-hosting-cost", type=int, default=None, help="Default hosting cost")
    p.add_argument("--app-data", action="append", default=None, help="Custom application data (k=v)")

    p = entity("service", update_service)
    p.add_argument("-a", "--role-attributes", action="append", default=None, help="Set role attributes")
    p.add_argument("-c", "--configs", action="append", default=None, help="Set the configs (ids or names)")
    p.add_argument("--terminator-strategy", default=None, help="Set the terminator strategy")
    p.add_argument("-e", "--encryption", default=None, help="end-to-end encryption: ON or OFF")
    p.add_argument("--max-idle-time", default=None, help="Time after which idle circuits are terminated")

    p = entity("config", update_config)
    p.add_argument("-d", "--data", default=None, help="Set the config data (JSON)")
    p.add_argument("-f", "--json-file", default=None, help="Read the config data from a file")

    for name, collection, roles, aliases in (
        (
            "service-policy",
            "service-policies",
            {
                "service_roles": ("serviceRoles", "services"),
                "identity_roles": ("identityRoles", "identities"),
                "posture_check_roles": ("postureCheckRoles", "posture-checks"),
            },
            ("sp",),
        ),
        (
            "edge-router-policy",
            "edge-router-policies",
            {
                "edge_router_roles": ("edgeRouterRoles", "edge-routers"),
                "identity_roles": ("identityRoles", "identities"),
            },
            ("erp",),
        ),
        (
            "service-edge-router-policy",
            "service-edge-router-policies",
            {"edge_router_roles": ("edgeRouterRoles", "edge-routers"), "service_roles": ("serviceRoles", "services")},
            ("serp",),
        ),
    ):
        p = entity(name, update_policy(collection, roles), aliases=aliases)
        for flag in roles:
            p.add_argument("--" + flag.replace("_", "-"), action="append", default=None, help="Set these roles")
        p.add_argument("--semantic", default=None, help="AnyOf or AllOf")

    p = entity("edge-router", update_edge_router, aliases=("er",))
    p.add_argument("-a", "--role-attributes", action="append", default=None, help="Set role attributes")
    bool_flag(p, "-t", "--tunneler-enabled", dest="tunneler_enabled", help="Can this edge router be a tunneler")
    bool_flag(p, "--no-traversal", dest="no_traversal", help="Disallow traversal")
    p.add_argument("--cost", type=int, default=None, help="Set the router cost")

    p = entity("auth-policy", update_auth_policy)
    _auth_policy_flags(p)

    p = entity("ca", update_ca)
    _ca_flags(p)

    p = entity("ext-jwt-signer", update_ext_jwt_signer, aliases=("external-jwt-signer",))
    _signer_flags(p, patch=True)

    from harness.ziti import posture

    posture.register_update(sub, _entity)


def register_delete_and_list(edge_sub) -> None:
    delete = edge_sub.add_parser(
        "delete", help="deletes entities by id or name, or `delete KIND where FILTER`", description=cmd_delete.__doc__
    )
    delete.add_argument("kind", help="identity, service, config, service-policy, ... (singular or plural)")
    delete.add_argument("names", nargs="*", help="ids or names, or: where FILTER")
    add_common(delete)
    delete.set_defaults(func=cmd_delete)

    listing = edge_sub.add_parser("list", aliases=["ls"], help="lists entities managed by the Ziti Edge Controller")
    listing.add_argument("kind", help="identities, services, configs, service-policies, edge-routers, ...")
    listing.add_argument("filter", nargs="?", default=None, help="a filter, e.g. 'name contains \"x\" limit 100'")
    listing.add_argument("--csv", action="store_true", help="Output CSV instead of a formatted table")
    add_common(listing)
    listing.set_defaults(func=cmd_list)
