"""Falcon middleware over the request guards: the authentication rate limit and injected faults.

The guards (``controller/ops/requests.py``, ``controller/simulation.py``) see a
``RequestInfo`` (method, path, remote address), never a Falcon request; this
module is where HTTP meets them.
"""

from __future__ import annotations

from controller.ops.requests import RequestGuard, RequestInfo
from controller.simulation import FaultInjector


class GuardMiddleware:
    """Runs after ``RequestMiddleware`` (the path is already aliased), before any handler."""

    def __init__(self, request_guard: RequestGuard, faults: FaultInjector):
        self._guard, self._faults = request_guard, faults

    def process_request(self, req, resp) -> None:
        if not (self._guard.active or self._faults.active):  # nothing configured: every request passes
            return
        seen = RequestInfo(req.method, req.path, req.remote_addr or "")
        self._guard.check(seen)
        self._faults.apply(seen.method, seen.path)


def on_dropped(req, resp, ex, params) -> None:
    """Promise more body than is sent: the server closes, every HTTP client sees a broken connection."""
    resp.status = 200
    resp.content_type = "application/json"
    resp.content_length = 4096
    resp.stream = iter([b"{"])  # an iterator: the server cannot recompute the length
