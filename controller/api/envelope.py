"""The success envelope ``{data, meta}`` shared by every resource."""

from __future__ import annotations

from typing import Any

ERROR_META = {"apiEnrollmentVersion": "0.0.1", "apiVersion": "0.0.1"}
#: what the real controller reports as the limit of an unlimited list
UNLIMITED = 9223372036854775807


def ok(data: Any) -> dict:
    return {"data": data, "meta": {}}


def empty() -> dict:
    return {"data": {}, "meta": {}}


def created(collection: str, entity_id: str) -> dict:
    """201 body: ``{"data": {"_links": {"self": {"href": "./<coll>/<id>"}}, "id"}, "meta": {}}``."""
    return {"data": {"_links": {"self": {"href": f"./{collection}/{entity_id}"}}, "id": entity_id}, "meta": {}}


def listed(items: list, pagination: dict, filterable: list[str] | None = None) -> dict:
    meta: dict[str, Any] = {"pagination": pagination}
    if filterable:
        meta["filterableFields"] = filterable
    return {"data": items, "meta": meta}


def error(code: str, message: str, request_id: str, cause: dict | None = None) -> dict:
    body: dict[str, Any] = {"code": code, "message": message, "requestId": request_id}
    if cause is not None:
        body["cause"] = cause
    return {"error": body, "meta": dict(ERROR_META)}
