"""CORS on both APIs, answered as the real controller's gorilla/handlers wrapper does.

Configuration there: origins ``*``, credentials allowed, headers ``content-type,
accept, authorization, zt-session``, methods GET HEAD POST PUT PATCH DELETE,
preflight status 200. A request without ``Origin`` is not a CORS request and
passes untouched; preflights are answered here and never reach the API.
"""

from __future__ import annotations

#: simple headers and methods a browser never needs permission for (not echoed back)
SIMPLE_HEADERS = frozenset({"Accept", "Accept-Language", "Content-Language", "Origin"})
SIMPLE_METHODS = frozenset({"GET", "HEAD", "POST"})
ALLOWED_HEADERS = SIMPLE_HEADERS | {"Content-Type", "Authorization", "Zt-Session"}
ALLOWED_METHODS = SIMPLE_METHODS | {"PUT", "PATCH", "DELETE"}


def canonical(header: str) -> str:
    """Go's ``CanonicalHeaderKey``: ``zt-session`` -> ``Zt-Session``."""
    return "-".join(part[:1].upper() + part[1:].lower() for part in header.strip().split("-"))


class CorsMiddleware:
    """Answers preflights and marks cross-origin replies (errors included)."""

    def process_request(self, req, resp):
        if req.method != "OPTIONS":
            return
        resp.complete = True  # like the real wrapper: OPTIONS never reaches an API handler
        resp.status, resp.text = 200, None
        if req.get_header("Origin"):
            self._preflight(req, resp)

    def process_response(self, req, resp, resource, req_succeeded):
        if req.get_header("Origin") and req.method != "OPTIONS":
            self._allow(resp)

    def _preflight(self, req, resp) -> None:
        method = req.get_header("Access-Control-Request-Method")
        if method is None:
            resp.status = 400
            return
        if method not in ALLOWED_METHODS:
            resp.status = 405
            return
        requested = [canonical(h) for h in (req.get_header("Access-Control-Request-Headers") or "").split(",")]
        echoed = [h for h in requested if h and h not in SIMPLE_HEADERS]
        if any(h not in ALLOWED_HEADERS for h in echoed):
            resp.status = 403
            return
        if echoed:
            resp.set_header("Access-Control-Allow-Headers", ",".join(echoed))
        if method not in SIMPLE_METHODS:
            resp.set_header("Access-Control-Allow-Methods", method)
        self._allow(resp)

    @staticmethod
    def _allow(resp) -> None:
        resp.set_header("Access-Control-Allow-Credentials", "true")
        resp.set_header("Access-Control-Allow-Origin", "*")
