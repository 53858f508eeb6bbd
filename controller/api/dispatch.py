"""Falcon glue: one resource per path, dispatching by method to operations."""

from __future__ import annotations

import logging

import falcon
import orjson

from controller import errors
from controller.api import envelope
from controller.api.call import Call, Created
from controller.api.operations import ADMIN, PARTIAL, PUBLIC, SESSION, Operation
from controller.model.validation import validate
from controller.store.query import Listing

log = logging.getLogger("controller.api")

MAX_BODY = 1024 * 1024
JSON_TYPES = ("application/json", "")


class PathResource:
    """Serves every method registered for one path of one API."""

    def __init__(self, api: str, ops: list[Operation]):
        self._api = api
        for op in ops:
            setattr(self, "on_" + op.method.lower(), self._responder(op))

    def _responder(self, op: Operation):
        def respond(req, resp, **params):
            # the app's bound handlers come with the request (middleware), so one router serves every app
            dispatch(req.context.api, op, self._api, req, resp, params)

        respond.__name__ = op.op_id
        respond.__doc__ = op.summary
        return respond


#: runs of a handler whose write lost to a concurrent one on another cluster member
REPLICA_RETRIES = 3


def dispatch(bound, op: Operation, api: str, req, resp, params: dict) -> None:
    """Run ``op`` for one request with the handler ``bound`` (a ``wiring.BoundApi``) holds for it."""
    call = Call(op, api, req, resp, params)
    authorize(call, bound.session_tokens)
    req.context.identity = call.identity  # for the access log
    if op.body is not None or op.content_types:
        call.body = read_body(call)
    for attempt in range(REPLICA_RETRIES):
        try:
            result = bound.handlers[op](call)
            break
        except errors.ReplicaConflict:  # nothing was written: run it again on the state that won
            if attempt == REPLICA_RETRIES - 1:
                raise
    render(call, result)


def authorize(call: Call, session_tokens) -> None:
    level = call.op.auth
    presented = call.presented()
    if level == PUBLIC:
        if session_tokens.presents_any(presented):
            try:
                attach(call, session_tokens.resolve(presented))
            except errors.Unauthorized:
                pass  # a public operation ignores a bad token
        return
    # an external JWT authenticates one request on its own, not the API-session operations
    attach(call, session_tokens.resolve(presented, per_request=level in (SESSION, ADMIN)))
    if level != PARTIAL and call.resolved.is_partial:
        raise errors.Unauthorized()
    if level == ADMIN and not call.is_admin:
        raise errors.Unauthorized()
    if level not in (PARTIAL, SESSION, ADMIN):  # pragma: no cover - table mistake
        raise errors.ControllerError(errors.UNHANDLED, f"unknown auth level {level}")


def attach(call: Call, resolved) -> None:
    call.resolved, call.session, call.identity = resolved, resolved.session, resolved.identity


def read_body(call: Call):
    req, op = call.req, call.op
    limit = op.max_body or MAX_BODY
    length = req.content_length
    if length is not None and length > limit:
        raise errors.TooLarge()
    raw = req.bounded_stream.read(limit + 1)
    if len(raw) > limit:
        raise errors.TooLarge()
    media = (req.content_type or "").split(";")[0].strip().lower()
    if media in op.content_types:
        return raw.decode("utf-8", errors="replace")
    if media not in JSON_TYPES and not media.endswith("+json"):
        if not raw.strip():
            media = ""
        else:
            raise errors.UnsupportedMedia(message=f"content type {media!r} is not supported by this operation")
    if not raw.strip():
        body = {} if op.body is not None else None
    else:
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as ex:
            raise errors.BadRequest(
                errors.COULD_NOT_PARSE_BODY, cause={"code": errors.UNHANDLED, "message": str(ex)}
            ) from ex
    if op.body is not None:
        validate(op.body, body)
    return body


def render(call: Call, result) -> None:
    resp, op = call.resp, call.op
    if op.reply == "raw":
        return
    if isinstance(result, Listing):
        body = envelope.listed(result.items, result.pagination, result.filterable)
        status = op.status
    elif isinstance(result, Created):
        body = envelope.created(result.collection, result.id)
        status = result.status
    elif result is None:
        body, status = envelope.empty(), op.status
    else:
        body, status = envelope.ok(result), op.status
    write_json(resp, body, status)


def write_json(resp, body, status: int = 200) -> None:
    resp.status = falcon.code_to_http_status(status)
    resp.content_type = "application/json"
    resp.data = orjson.dumps(body)
