"""``benchmarks.load.drive``: the load runs in another process and counts what it sent."""

from __future__ import annotations

from benchmarks.load import Request, drive
from controller.serve import ThreadedServer


def counting_app(environ, start_response):
    """Answer 200, or 404 under /missing."""
    status = "404 Not Found" if environ["PATH_INFO"].startswith("/missing") else "200 OK"
    start_response(status, [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]


def test_once_sends_every_request_exactly_once_over_the_connections():
    with ThreadedServer(counting_app, threads=2) as server:
        requests = [Request("POST", f"/item/{n}", body="{}") for n in range(12)]
        result = drive(server.url, requests, connections=3, once=True)
    assert (result.requests, result.errors) == (12, 0)
    assert result.rate > 0 and result.p50_ms <= result.p99_ms


def test_error_statuses_are_counted_and_the_first_is_reported():
    with ThreadedServer(counting_app, threads=2) as server:
        result = drive(server.url, [Request("GET", "/ok"), Request("GET", "/missing")], connections=1, once=True)
    assert (result.requests, result.errors) == (1, 1)
    assert result.first_error == "404 GET /missing"
