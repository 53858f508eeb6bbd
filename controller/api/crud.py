"""Generic CRUD operations for an ``EntityManager``: the one way to expose an entity.

``crud(IdentityManager)`` yields the six operations listIdentities, createIdentity,
detailIdentity, updateIdentity, patchIdentity and deleteIdentity on ``/identities``,
bound to the manager named ``identities`` (``Operation.uses``): every name comes from
the manager's declaration (``controller/entities.py``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from controller.api.call import Call, Created
from controller.api.mappers.entity import View, generic, listing
from controller.api.operations import ADMIN, MANAGEMENT, Operation
from controller.api.schemas import NO_BODIES, Bodies

KINDS = ("list", "create", "detail", "update", "patch", "delete")
LIST_QUERY = {"limit": {"type": "integer"}, "offset": {"type": "integer"}, "filter": {"type": "string"}}


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

    def handler(kind: str, default: Callable) -> dict:
        """The kind's handler: the caller's own (its parameters name its services) or the generic one."""
        if kind in handlers:
            given = handlers[kind]
            return dict(given) if isinstance(given, dict) else {"handler": given}
        return {"handler": default, "uses": uses}

    table: dict[str, Operation] = {
        "list": Operation(
            names["list"],
            "GET",
            path,
            **handler("list", lambda c, *, manager, view: listing(manager, c.list_args(), view)),
            apis=apis,
            auth=auth,
            reply="list",
            tag=tag,
            summary=f"List {plural.lower()}",
            query=LIST_QUERY,
        ),
        "create": Operation(
            names["create"],
            "POST",
            path,
            **handler("create", lambda c, *, manager, view: Created(declared.collection, create(manager, c))),
            apis=apis,
            auth=auth,
            body=schemas.create,
            reply="create",
            status=201,
            tag=tag,
            summary=f"Create a {singular.lower()}",
        ),
        "detail": Operation(
            names["detail"],
            "GET",
            item,
            **handler("detail", lambda c, *, manager, view: view(manager.get(c.param()))),
            apis=apis,
            auth=auth,
            tag=tag,
            summary=f"Retrieve a {singular.lower()}",
        ),
        "update": Operation(
            names["update"],
            "PUT",
            item,
            **handler("update", lambda c, *, manager, view: manager.update(c.param(), c.body, context=c.change)),
            apis=apis,
            auth=auth,
            body=schemas.update,
            reply="empty",
            tag=tag,
            summary=f"Replace a {singular.lower()}",
        ),
        "patch": Operation(
            names["patch"],
            "PATCH",
            item,
            **handler("patch", lambda c, *, manager, view: manager.patch(c.param(), c.body, context=c.change)),
            apis=apis,
            auth=auth,
            body=schemas.patch,
            reply="empty",
            tag=tag,
            summary=f"Update the supplied fields of a {singular.lower()}",
        ),
        "delete": Operation(
            names["delete"],
            "DELETE",
            item,
            **handler("delete", lambda c, *, manager, view: manager.delete(c.param(), context=c.change)),
            apis=apis,
            auth=auth,
            reply="empty",
            tag=tag,
            summary=f"Delete a {singular.lower()}",
        ),
    }
    overrides = overrides or {}
    return [replace(table[kind], **overrides.get(kind, {})) for kind in kinds]


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
