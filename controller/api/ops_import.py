"""``importEntities``: many creates in one all-or-nothing request (an extension of ours).

Not an OpenZiti operation: ``POST /edge/management/v1/imports``, admin only.
The body is an ordered list of create operations::

    {
        "items": [
            {"op": "createIdentity", "ref": "identities/alice", "body": {...}},
            {"op": "createServicePolicy", "body": {"identityRoles": [{"$ref": "identities/alice", "prefix": "@"}]}},
        ]
    }

Each item is checked and run by exactly the code of its own operation (its body
schema, its handler, its manager), all inside one store transaction: the first
failure undoes every item and is reported with the item's position in
``cause.field`` (``items.3.body.name``). A ``{"$ref": r}`` object anywhere in a
body stands for the id created by the earlier item whose ``ref`` is ``r`` (with
``prefix`` prepended, e.g. ``@`` in role lists); real ids are plain strings.
The reply maps each ``ref`` to the id created for it.
"""

from __future__ import annotations

from typing import Any

from controller import errors
from controller.api.call import Call
from controller.api.operations import ADMIN, MANAGEMENT, Operation
from controller.api.schemas.imports import IMPORT
from controller.gc_pause import gc_paused
from controller.model.validation import validate

MAX_IMPORT_BODY = 256 << 20  # a whole large network: about 15 MB per 100,000 entities
IMPORT_PATH = "/imports"  # under the management API's prefix


def import_entities(call: Call, *, routes, handlers, database) -> dict:
    creates = {op.op_id: op for op in routes.for_api(MANAGEMENT) if _importable(op)}
    created: dict[str, str] = {}
    with gc_paused(), database.transaction(call.change):  # GC paused: see gc_pause
        for index, item in enumerate(call.body["items"]):
            try:
                created_id = _run(call, creates, handlers, item, created)
            except errors.ControllerError as ex:
                raise _located(ex, index) from ex
            if item.get("ref"):
                created[item["ref"]] = created_id
    return {"created": created, "count": len(call.body["items"])}


def _importable(op: Operation) -> bool:
    return op.method == "POST" and op.reply == "create" and op.auth == ADMIN and op.op_id != "importEntities"


def _run(call: Call, creates: dict[str, Operation], handlers: dict, item: dict, created: dict[str, str]) -> str:
    op = creates.get(item["op"])
    if op is None:
        raise errors.FieldError("op", f"op must name a create operation, not {item['op']!r}", item["op"])
    body = _resolve(item["body"], created)
    validate(op.body, body)  # as dispatch does for the operation itself
    inner = Call(op, MANAGEMENT, call.req, call.resp, {})
    inner.body, inner.session, inner.identity = body, call.session, call.identity
    return handlers[op](inner).id


def _resolve(value: Any, created: dict[str, str]) -> Any:
    """The body with every ``{"$ref": r, "prefix": p}`` replaced by ``p + id``."""
    if isinstance(value, dict):
        if "$ref" in value and set(value) <= {"$ref", "prefix"}:
            ref, prefix = value["$ref"], value.get("prefix") or ""
            if not isinstance(ref, str) or ref not in created or not isinstance(prefix, str):
                raise errors.FieldError("$ref", f"unknown reference {ref!r}: refer only to earlier items", ref)
            return prefix + created[ref]
        return {key: _resolve(inner, created) for key, inner in value.items()}
    if isinstance(value, list):
        return [_resolve(inner, created) for inner in value]
    return value


def _located(ex: errors.ControllerError, index: int) -> errors.ControllerError:
    """The same error, its cause naming the item that failed."""
    cause = dict(ex.cause or {})
    field = cause.get("field")
    cause["field"] = f"items.{index}" + (f".body.{field}" if field and field != "op" else ".op" if field else "")
    ex.cause = cause
    return ex


def operations() -> list[Operation]:
    return [
        Operation(
            "importEntities",
            "POST",
            IMPORT_PATH,
            import_entities,
            apis=(MANAGEMENT,),
            body=IMPORT,
            tag="Import",
            summary="Create many entities at once, all or nothing (extension)",
            max_body=MAX_IMPORT_BODY,
        )
    ]
