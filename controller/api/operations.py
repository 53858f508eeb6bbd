"""The route table: every operation the controller serves, declared once.

An :class:`Operation` names the real operationId, its method and path (relative
to the API prefix), which APIs serve it, the authorization it needs, its body
schema and its handler. A handler takes the request (``call``) and, after ``*``, the services
it names (``controller/api/wiring.py`` binds them when the app is built). The same table builds the Falcon routes, the OpenAPI
documents, the admin-access test matrix and the harness client.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

CLIENT = "client"
MANAGEMENT = "management"
FABRIC = "fabric"
BOTH = (CLIENT, MANAGEMENT)

PREFIXES = {CLIENT: "/edge/client/v1", MANAGEMENT: "/edge/management/v1", FABRIC: "/fabric/v1"}

#: authorization levels, weakest first
PUBLIC, PARTIAL, SESSION, ADMIN = "public", "partial", "session", "admin"


@dataclass(frozen=True, eq=False)
class Operation:
    op_id: str
    method: str
    path: str
    handler: Callable[..., Any]
    apis: tuple[str, ...] = BOTH
    auth: str = ADMIN
    body: dict | None = None
    #: "list" | "detail" | "create" | "empty" | "raw"
    reply: str = "detail"
    status: int = 200
    tag: str = ""
    summary: str = ""
    #: documented query parameters: name -> JSON schema
    query: dict = field(default_factory=dict)
    #: content types accepted besides JSON (enrollment CSRs, CA verification)
    content_types: tuple[str, ...] = ()
    #: body is optional (empty body allowed even with a schema)
    body_optional: bool = False
    #: largest accepted body in bytes (None: the default of 1 MiB)
    max_body: int | None = None
    #: parameter -> service name or mapper, for a generic handler whose services are chosen here
    #: (None: the handler's keyword-only parameters name them; ``controller/api/wiring.py``)
    uses: Mapping[str, Any] | None = None


def operation_defaults(**defaults: Any) -> Callable[..., Operation]:
    """An :class:`Operation` builder for one module: what a row leaves out takes ``defaults`` (APIs, auth, tag...).

    ``op = operation_defaults(apis=BOTH, auth=PARTIAL, tag="MFA")`` then one row per operation:
    ``op("detailMfa", "GET /current-identity/mfa", detail_mfa, "Return the MFA enrollment", reply="raw")``.
    """

    def op(op_id: str, route: str, handler: Callable[..., Any], summary: str = "", **fields: Any) -> Operation:
        method, path = route.split(" ", 1)
        return Operation(op_id, method, path, handler, **{**defaults, "summary": summary, **fields})

    return op


class RouteTable:
    """An ordered collection of operations, unique per (api, method, path)."""

    def __init__(self):
        self._ops: list[Operation] = []
        self._keys: set[tuple[str, str, str]] = set()

    def add(self, op: Operation) -> Operation:
        for api in op.apis:
            key = (api, op.method, op.path)
            if key in self._keys:
                raise ValueError(f"duplicate route {key}")
            self._keys.add(key)
        self._ops.append(op)
        return op

    def extend(self, ops) -> None:
        for op in ops:
            self.add(op)

    def __iter__(self):
        return iter(self._ops)

    def for_api(self, api: str) -> list[Operation]:
        return [op for op in self._ops if api in op.apis]

    def find(self, api: str, method: str, path: str) -> Operation | None:
        for op in self._ops:
            if api in op.apis and op.method == method and op.path == path:
                return op
        return None
