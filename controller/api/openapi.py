"""The project's own OpenAPI (Swagger 2.0) documents, generated from the route table.

Nothing here is copied from the real controller: paths, parameters and body
schemas come from the ``Operation`` declarations that also build the routes.
"""

from __future__ import annotations

import copy
import re

from controller.api.operations import CLIENT, FABRIC, MANAGEMENT, PREFIXES, PUBLIC
from controller.config import VERSION

TITLES = {
    CLIENT: "Python Edge Controller: Client API",
    MANAGEMENT: "Python Edge Controller: Management API",
    FABRIC: "Python Edge Controller: Fabric API",
}
SPEC_IDS = {CLIENT: "edge-client", MANAGEMENT: "edge-management", FABRIC: "fabric"}
_PARAM = re.compile(r"{(\w+)}")


def to_swagger_schema(schema: dict | None) -> dict:
    """JSON Schema (draft 7) -> Swagger 2.0 schema: ``[T, "null"]`` becomes ``x-nullable``."""
    if schema is None:
        return {"type": "object"}
    out = copy.deepcopy(schema)
    _convert(out)
    return out


def _convert(node) -> None:
    if isinstance(node, dict):
        kind = node.get("type")
        if isinstance(kind, list):
            rest = [k for k in kind if k != "null"]
            if len(rest) < len(kind):
                node["x-nullable"] = True
            if len(rest) == 1:
                node["type"] = rest[0]
            else:
                node.pop("type")
        if "enum" in node:
            node["enum"] = [v for v in node["enum"] if v is not None]
        for value in node.values():
            _convert(value)
    elif isinstance(node, list):
        for value in node:
            _convert(value)


def document(routes, api: str) -> dict:
    """The Swagger 2.0 document of one API."""
    paths: dict = {}
    for op in routes.for_api(api):
        entry = paths.setdefault(op.path, {})
        entry[op.method.lower()] = _operation(op)
    return {
        "swagger": "2.0",
        "info": {"title": TITLES[api], "version": VERSION},
        "basePath": PREFIXES[api],
        "consumes": ["application/json"],
        "produces": ["application/json"],
        "schemes": ["https"],
        "securityDefinitions": {"ztSession": {"type": "apiKey", "in": "header", "name": "zt-session"}},
        "paths": dict(sorted(paths.items())),
    }


def _operation(op) -> dict:
    params = [{"name": name, "in": "path", "required": True, "type": "string"} for name in _PARAM.findall(op.path)]
    for name, schema in op.query.items():
        param = {"name": name, "in": "query", "required": False}
        param.update(to_swagger_schema(schema))
        if param.get("type") == "array":
            param["collectionFormat"] = "multi"
        params.append(param)
    if op.body is not None:
        params.append(
            {"name": "body", "in": "body", "required": not op.body_optional, "schema": to_swagger_schema(op.body)}
        )
    out = {
        "operationId": op.op_id,
        "summary": op.summary,
        "tags": [op.tag] if op.tag else [],
        "parameters": params,
        "responses": _responses(op),
    }
    if op.content_types:
        out["consumes"] = ["application/json", *op.content_types]
    if op.auth != PUBLIC:
        out["security"] = [{"ztSession": []}]
    return out


DESCRIPTIONS = {
    400: "The supplied request contains invalid fields or could not be parsed",
    401: "The supplied session does not have the correct access rights to request this resource",
    403: "The operation does not apply to this kind of resource",
    404: "The requested resource does not exist",
    409: "The request conflicts with the state of a resource (referenced, already existing or enrolled)",
    410: "The enrollment was already used",
    413: "The request body is too large",
    415: "The content type of the request is not supported",
    429: "The resource is rate limited and the rate limit has been exceeded",
    500: "The operation failed on the server",
    503: "The request timed out or the data store cannot accept it at this time",
}


def statuses(op) -> set[int]:
    """Every status ``op`` can answer with (the official documents add 429 and 503 almost everywhere)."""
    codes = {op.status}
    if op.auth == PUBLIC and op.method == "GET":  # version, specs, CA bundle, signer list
        return codes | ({404} if "{" in op.path else set())
    codes |= {401, 404, 429, 503}
    if op.body is not None or op.content_types or op.query or op.method != "GET":
        codes.add(400)
    if op.method != "GET":
        codes.add(409)
    if op.body is not None or op.content_types:
        codes |= {413, 415}
    if op.path.startswith("/enroll"):
        codes.add(410)
    if op.path.startswith("/authenticators/{id}/"):
        codes.add(403)
    if op.path.startswith("/cluster/"):  # SERVER_NOT_RUNNING_IN_HA_MODE; a leadership transfer that failed
        codes |= {400} | ({500} if op.path.endswith("/transfer-leadership") else set())
    return codes


def _responses(op) -> dict:
    return {
        str(code): {"description": "Success" if code < 300 else DESCRIPTIONS[code]} for code in sorted(statuses(op))
    }
