"""Request middleware and the one error path."""

from __future__ import annotations

import logging

import falcon

from controller import errors
from controller.api import envelope
from controller.api.challenges import www_authenticate
from controller.api.dispatch import write_json
from controller.api.status import status_of
from controller.config import VERSION

log = logging.getLogger("controller.api")

CLIENT_PREFIX = "/edge/client/v1"
KNOWN_ROOTS = ("/edge/", "/fabric/", "/.well-known/", "/oidc/", "/zac/")
#: served where they are, not as client API paths (``/zac``: the single-page app, ``controller/api/spa.py``)
UNALIASED = ("/edge", "/fabric", "/.well-known", "/oidc", "/.well-known/openid-configuration", "/zac")


def clean_path(path: str) -> str:
    """Repeated slashes collapsed and a trailing slash dropped, as the real controller's router cleans a path.

    ``/edge/management/v1//services/ID//`` routes as ``/edge/management/v1/services/ID``. Dot segments
    are left alone: no route has one, and the single-page app refuses them.
    """
    if "//" not in path and (len(path) <= 1 or not path.endswith("/")):
        return path
    return "/" + "/".join(part for part in path.split("/") if part)


def alias_path(path: str) -> str:
    """The real controller's client-listener aliases.

    Paths not under ``/edge``, ``/fabric`` or ``/.well-known`` are client API
    paths (``/version``, ``/authenticate``), and ``/edge/v1/...`` is the client API.
    """
    if path.startswith("/edge/v1/") or path == "/edge/v1":
        return CLIENT_PREFIX + path[len("/edge/v1") :]
    if path in UNALIASED:
        return path
    if path.startswith(KNOWN_ROOTS):
        if path.startswith("/.well-known/"):
            return CLIENT_PREFIX + path
        return path
    if path == "/":
        return CLIENT_PREFIX
    return CLIENT_PREFIX + path


class RequestMiddleware:
    """Names the request, aliases its path and hands it the app's bound operations (``wiring.BoundApi``)."""

    def __init__(self, *, ids, instance_id: str, api):
        self._ids, self._instance_id, self._api = ids, instance_id, api

    def process_request(self, req, resp):
        req.context.request_id = self._ids.request_id()
        req.context.api = self._api
        path = alias_path(clean_path(req.path))
        if path != req.path:
            req.path = path
        resp.set_header("ziti-instance-id", self._instance_id)
        resp.set_header("server", f"ziti-controller/{VERSION}")


def install_error_handlers(app, ids) -> None:
    def on_controller_error(req, resp, ex, params):
        status = status_of(ex)
        if isinstance(ex, errors.Unauthorized) and ex.challenges:
            resp.set_header("WWW-Authenticate", www_authenticate(ex.challenges))
        request_id = getattr(req.context, "request_id", "")
        write_json(resp, envelope.error(ex.code, ex.message, request_id, ex.cause), status)

    def on_unexpected(req, resp, ex, params):
        if isinstance(ex, falcon.HTTPError):
            return on_http_error(req, resp, ex, params)
        request_id = getattr(req.context, "request_id", "")
        log.exception("unhandled error in request %s %s (requestId %s)", req.method, req.path, request_id)
        write_json(resp, envelope.error(errors.UNHANDLED, errors.message_for(errors.UNHANDLED), request_id), 500)

    def on_http_error(req, resp, ex, params):
        code = _code_for_http_error(ex)
        request_id = getattr(req.context, "request_id", "") or ids.request_id()
        cause = {"code": errors.UNHANDLED, "message": ex.description} if ex.description else None
        for name, value in (ex.headers or {}).items():
            resp.set_header(name, value)
        write_json(resp, envelope.error(code, errors.message_for(code, ex.title), request_id, cause), ex.status_code)

    app.add_error_handler(Exception, on_unexpected)
    app.add_error_handler(falcon.HTTPError, on_http_error)
    app.add_error_handler(errors.ControllerError, on_controller_error)


def _code_for_http_error(ex) -> str:
    status = ex.status_code
    return {
        400: errors.COULD_NOT_VALIDATE,
        401: errors.UNAUTHORIZED,
        404: errors.NOT_FOUND,
        405: errors.METHOD_NOT_ALLOWED,
        406: errors.NOT_ACCEPTABLE,
        413: errors.REQUEST_ENTITY_TOO_LARGE,
        415: errors.UNSUPPORTED_MEDIA,
        429: errors.RATE_LIMITED,
    }.get(status, errors.UNHANDLED)
