"""Generic CRUD operations for an ``EntityManager``: the one way to expose an entity.

``crud(IdentityManager)`` yields the six operations listIdentities, createIdentity,
detailIdentity, updateIdentity, patchIdentity and deleteIdentity on ``/identities``,
wired to the manager named ``identities`` on the controller: every name comes from
the manager's declaration (``controller/entities.py``).
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
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

    ``handlers`` replaces a kind's handler; ``overrides`` replaces other fields of a
    kind's operation, e.g. ``{"list": {"query": ROLE_QUERY}}``. ``view(ctl, record)``
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
    mgr = lambda call: getattr(call.ctl, attr)  # noqa: E731 - resolved per request
    view = view or generic(manager_cls)

    table: dict[str, Operation] = {
        "list": Operation(
            names["list"],
            "GET",
            path,
            handlers.get("list") or (lambda c: listing(mgr(c), c.list_args(), partial(view, c.ctl))),
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
            handlers.get("create") or (lambda c: Created(declared.collection, mgr(c).create(c.body, context=c.change))),
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
            handlers.get("detail") or (lambda c: view(c.ctl, mgr(c).get(c.param()))),
            apis=apis,
            auth=auth,
            tag=tag,
            summary=f"Retrieve a {singular.lower()}",
        ),
        "update": Operation(
            names["update"],
            "PUT",
            item,
            handlers.get("update") or (lambda c: mgr(c).update(c.param(), c.body, context=c.change)),
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
            handlers.get("patch") or (lambda c: mgr(c).patch(c.param(), c.body, context=c.change)),
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
            handlers.get("delete") or (lambda c: mgr(c).delete(c.param(), context=c.change)),
            apis=apis,
            auth=auth,
            reply="empty",
            tag=tag,
            summary=f"Delete a {singular.lower()}",
        ),
    }
    overrides = overrides or {}
    return [replace(table[kind], **overrides.get(kind, {})) for kind in kinds]


def related(
    op_id: str,
    path: str,
    fn: Callable[[Call], object],
    *,
    tag: str,
    summary: str,
    apis=(MANAGEMENT,),
    auth=ADMIN,
    query: dict | None = None,
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
    )
