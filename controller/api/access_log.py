"""The access log: one line per request at INFO on ``controller.access``.

``GET /edge/management/v1/identities 200 1.8ms admin rid=Xy12ab``: method, path
(never the query string, which can carry enrollment tokens), status, duration,
who asked (the session's identity name, or ``anonymous``) and the request id.
APPSEC(cli): headers, bodies and query strings are never logged: they carry
session tokens, passwords and one-time tokens.
"""

from __future__ import annotations

import logging
import time

log = logging.getLogger("controller.access")


class AccessLogMiddleware:
    """Falcon middleware writing the access log (a no-op below INFO)."""

    def process_request(self, req, resp):
        req.context.started = time.perf_counter()

    def process_response(self, req, resp, resource, req_succeeded):
        if not log.isEnabledFor(logging.INFO):
            return
        started = getattr(req.context, "started", None)
        took = (time.perf_counter() - started) * 1000 if started is not None else 0.0
        identity = getattr(req.context, "identity", None) or {}
        log.info(
            "%s %s %d %.1fms %s rid=%s",
            req.method,
            req.path,
            resp.status_code,
            took,
            identity.get("name") or "anonymous",
            getattr(req.context, "request_id", "-"),
        )
