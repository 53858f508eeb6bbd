"""``benchmarks.load.drive``: the load runs in another process and counts what it sent."""

from __future__ import annotations

import shutil

import pytest

from benchmarks.load import Request, drive, wrk_writes
from controller.server.serve import ThreadedServer


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


def recording_app(bodies: list):
    """Answer 201 and keep each request body."""

    def app(environ, start_response):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        bodies.append(environ["wsgi.input"].read(length).decode())
        start_response("201 Created", [("Content-Type", "text/plain"), ("Content-Length", "2")])
        return [b"ok"]

    return app


def test_a_timed_run_makes_every_seq_in_the_body_unique():
    bodies: list[str] = []
    with ThreadedServer(recording_app(bodies), threads=2) as server:
        result = drive(server.url, Request("POST", "/x", '{"name":"n-{seq}"}'), connections=2, seconds=0.3)
    assert result.requests == len(bodies) > 2 and result.errors == 0
    assert len(set(bodies)) == len(bodies) and all(body.startswith('{"name":"n-') for body in bodies)


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")
def test_wrk_writes_sends_unique_bodies_and_counts_what_the_server_saw():
    bodies: list[str] = []
    with ThreadedServer(recording_app(bodies), threads=2) as server:
        request = Request("POST", "/x", '{"name":"n-{seq}","quote":"\\"é"}', {"content-type": "application/json"})
        first = wrk_writes(server.url, request, connections=2, seconds=1)
        second = wrk_writes(server.url, request, connections=2, seconds=1)
    assert first.errors == second.errors == 0
    counted = first.requests + second.requests
    assert 2 < counted <= len(bodies) <= counted + 4  # wrk leaves uncounted the requests in flight at its end
    assert len(set(bodies)) == len(bodies)
    assert all(body.startswith('{"name":"n-') and body.endswith('","quote":"\\"é"}') for body in bodies)


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")
def test_wrk_writes_counts_error_statuses():
    with ThreadedServer(counting_app, threads=2) as server:
        result = wrk_writes(server.url, Request("GET", "/missing/{seq}"), connections=1, seconds=1)
    assert result.errors > 0 and result.requests == 0
