"""``roleFilter``/``roleSemantic`` on entity lists and the ``*-role-attributes`` listings.

Both are answered by the policy engine's attribute indexes, so their cost follows
the number of matches, not the number of entities.
"""

from __future__ import annotations

import heapq
from typing import Callable

from controller.api.call import Call
from controller.api.crud import LIST_QUERY
from controller.api.mappers.entity import View, listing
from controller.api.operations import MANAGEMENT, Operation
from controller.entities import ROLE_TARGETS, kebab
from controller.errors import FieldError
from controller.store.query import UNLIMITED, FieldSet, Listing, list_page

ROLE_QUERY = {
    **LIST_QUERY,
    "roleFilter": {"type": "array", "items": {"type": "string"}},
    "roleSemantic": {"type": "string", "enum": ["AllOf", "AnyOf"]},
}
ATTRIBUTE_FIELDS = FieldSet((), tags=False)


def role_candidates(call: Call, kind: str, manager, engine) -> list[dict] | None:
    """Records matching ``roleFilter`` under ``roleSemantic`` (None when no filter was given)."""
    roles = call.req.get_param_as_list("roleFilter") or []
    if not roles:
        return None
    ids = engine.role_filter(kind, roles, call.query("roleSemantic") or "AllOf")
    return [record for record in map(manager.find, ids) if record is not None]


def role_filtered_listing(kind: str, view: View) -> dict:
    """The handler (and its ``uses``) listing the entities of engine ``kind`` with ``roleFilter``, rendered by ``view``."""

    def handler(call: Call, *, manager, engine, view) -> Listing:
        candidates = role_candidates(call, kind, manager, engine)
        return listing(manager, call.list_args(), view, candidates=candidates)

    return {"handler": handler, "uses": {"manager": ROLE_TARGETS[kind].key, "engine": "engine", "view": view}}


def attribute_listing(kind: str):
    """``data`` = attributes carried by at least one entity; only ``filter`` (on ``id``) applies."""

    def handler(call: Call, *, engine) -> Listing:
        records = [{"id": attr} for attr in engine.attributes(kind)]
        page = list_page(records, ATTRIBUTE_FIELDS, filter=call.query("filter"), limit=-1)
        return Listing([r["id"] for r in page.items], page.pagination(), ATTRIBUTE_FIELDS.names())

    return handler


def attribute_operation(kind: str, tag: str) -> Operation:
    """``list<Entity>RoleAttributes`` on ``/<entity>-role-attributes``."""
    singular = ROLE_TARGETS[kind].singular
    return Operation(
        f"list{singular}RoleAttributes",
        "GET",
        f"/{kebab(singular)}-role-attributes",
        attribute_listing(kind),
        apis=(MANAGEMENT,),
        reply="list",
        tag=tag,
        summary=f"List the role attributes in use by {tag.lower()}s",
        query={"filter": {"type": "string"}},
    )


def id_listing(manager, ids, args: dict, render: Callable[[dict], dict]) -> Listing:
    """A listing of ``ids``: without ``filter``/``sort`` only the page's records are read (ids in order).

    The real controller pages an identity's service ids the same way; with a filter or a
    sort every candidate record is read and ``list_page`` applies.
    """
    if args.get("filter") or args.get("sort"):
        return listing(manager, args, render, candidates=records_of(manager, ids))
    bounds = list_page((), manager.fields, limit=args.get("limit"), offset=args.get("offset"))
    end = None if bounds.limit == UNLIMITED else bounds.offset + bounds.limit
    ordered = sorted(ids) if end is None or end * 4 >= len(ids) else heapq.nsmallest(end, ids)
    items = [render(record) for record in records_of(manager, ordered[bounds.offset : end])]
    return Listing(
        items, {"limit": bounds.limit, "offset": bounds.offset, "totalCount": len(ids)}, manager.fields.names()
    )


def records_of(manager, ids) -> list[dict]:
    """The existing records of ``ids`` (related listings hand these to ``listing``)."""
    return [record for record in map(manager.find, ids) if record is not None]


def policy_type_query(call: Call) -> str | None:
    """``policyType=dial|bind`` (any case) or None; 400 for anything else."""
    value = call.query("policyType")
    if value is None or value == "":
        return None
    if value.lower() not in ("dial", "bind"):
        raise FieldError("policyType", "policyType in query should be one of [dial bind]", value)
    return "Dial" if value.lower() == "dial" else "Bind"
