"""Generic CRUD operations for an ``EntityManager``: the one way to expose an entity.

``crud(IdentityManager)`` yields the six operations listIdentities, createIdentity,
detailIdentity, updateIdentity, patchIdentity and deleteIdentity on ``/identities``,
bound to the manager named ``identities`` (``Operation.uses``): every name comes from
the manager's declaration (``controller/entities.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

from controller.api.call import Call, Created
from controller.api.mappers.entity import View, generic, listing
from controller.api.operations import ADMIN, MANAGEMENT, Operation
from controller.api.schemas import NO_BODIES, Bodies

LIST_QUERY = {"limit": {"type": "integer"}, "offset": {"type": "integer"}, "filter": {"type": "string"}}


def _list(c: Call, *, manager, view):
    return listing(manager, c.list_args(), view)


def _create(c: Call, *, manager, view):
    return Created(manager.declaration.collection, create(manager, c))


def _detail(c: Call, *, manager, view):
    return view(manager.get(c.param()))


def _update(c: Call, *, manager, view):
    return manager.update(c.param(), c.body, context=c.change)


def _patch(c: Call, *, manager, view):
    return manager.patch(c.param(), c.body, context=c.change)


def _delete(c: Call, *, manager, view):
    return manager.delete(c.param(), context=c.change)


@dataclass(frozen=True)
class Kind:
    """One of the six CRUD operations, as data: ``summary`` names the entity as ``{singular}``/``{plural}``."""

    method: str
    on_item: bool
    reply: str
    summary: str
    handler: Callable[..., Any]
    #: the ``Bodies`` field holding its request body (None: no body)
    body: str | None = None
    status: int = 200
    query: dict = field(default_factory=dict)


KIND_TABLE = {
    "list": Kind("GET", False, "list", "List {plural}", _list, query=LIST_QUERY),
    "create": Kind("POST", False, "create", "Create a {singular}", _create, body="create", status=201),
    "detail": Kind("GET", True, "detail", "Retrieve a {singular}", _detail),
    "update": Kind("PUT", True, "empty", "Replace a {singular}", _update, body="update"),
    "patch": Kind("PATCH", True, "empty", "Update the supplied fields of a {singular}", _patch, body="patch"),
    "delete": Kind("DELETE", True, "empty", "Delete a {singular}", _delete),
}
KINDS = tuple(KIND_TABLE)


def crud(
    manager_cls,
    *,
    kinds=KINDS,
    apis=(MANAGEMENT,),
    auth=ADMIN,
    handlers: dict | None = None,
    overrides: dict[str, dict] | None = None,
    tag: str | None = None,
    view: View | None = None,
    schemas: Bodies = NO_BODIES,
) -> list[Operation]:
    """Operations for the entity ``manager_cls.declaration`` declares, in the order of ``kinds``.

    ``handlers`` replaces a kind's handler (a function, or ``{"handler", "uses"}``); ``overrides`` replaces other fields of a
    kind's operation, e.g. ``{"list": {"query": ROLE_QUERY}}``. ``view(record)`` (a mapper)
    renders the list and detail answers (default: the declaration alone); ``schemas``
    holds the create, update and patch request bodies (``controller/api/schemas``).
    """
    declared = manager_cls.declaration
    singular, plural, attr = declared.singular, declared.plural, declared.key
    names = {kind: declared.op_id(kind) for kind in KINDS}
    handlers = handlers or {}
    path = "/" + declared.collection
    item = path + "/{id}"
    tag = tag or singular
    view = view or generic(manager_cls)
    uses = {"manager": attr, "view": view}
    words = {"singular": singular.lower(), "plural": plural.lower()}

    def operation(kind: str) -> Operation:
        spec = KIND_TABLE[kind]
        given = handlers.get(kind)
        # the caller's own handler (its parameters name its services), else the generic one bound to the manager
        bound = {"handler": spec.handler, "uses": uses} if given is None else given
        return Operation(
            names[kind],
            spec.method,
            item if spec.on_item else path,
            **(dict(bound) if isinstance(bound, dict) else {"handler": bound}),
            apis=apis,
            auth=auth,
            body=getattr(schemas, spec.body) if spec.body else None,
            reply=spec.reply,
            status=spec.status,
            tag=tag,
            summary=spec.summary.format(**words),
            query=spec.query or {},
        )

    overrides = overrides or {}
    return [replace(operation(kind), **overrides.get(kind, {})) for kind in kinds]


def create(manager, call: Call) -> str:
    return manager.create(call.body, context=call.change)


def related(
    op_id: str,
    path: str,
    fn: Callable[..., object],
    *,
    tag: str,
    summary: str,
    apis=(MANAGEMENT,),
    auth=ADMIN,
    query: dict | None = None,
    uses: dict | None = None,
) -> Operation:
    """A list of related entities (``/identities/{id}/authenticators`` and the like)."""
    return Operation(
        op_id,
        "GET",
        path,
        fn,
        apis=apis,
        auth=auth,
        reply="list",
        tag=tag,
        summary=summary,
        query=query if query is not None else LIST_QUERY,
        uses=uses,
    )
