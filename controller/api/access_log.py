"""The access log: one line per request at INFO on ``controller.access``.

``GET /edge/management/v1/identities 200 1.8ms admin rid=Xy12ab``: method, path
(never the query string, which can carry enrollment tokens), status, duration,
who asked (the session's identity name, or ``anonymous``) and the request id.
APPSEC(cli): headers, bodies and query strings are never logged: they carry
session tokens, passwords and one-time tokens.

A request pays for one queue append and nothing else: one writer thread turns
the entries into log records (stamped with the time the request ended) and hands
them to the handlers, so no worker waits on a handler's lock or a slow stream.
One queue keeps the lines in the order the requests ended; ``flush`` waits until
what was queued so far is written (tests, and once at exit).
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
import time

log = logging.getLogger("controller.access")
FORMAT = "%s %s %d %.1fms %s rid=%s"


class _Writer:
    """One daemon thread writing queued entries, started with the first one."""

    def __init__(self):
        self.entries: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def put(self, entry: tuple) -> None:
        if self._thread is None:
            self._start()
        self.entries.put(entry)

    def _start(self) -> None:
        with self._start_lock:
            if self._thread is None:
                thread = threading.Thread(target=self._run, name="access-log", daemon=True)
                thread.start()
                self._thread = thread

    def _run(self) -> None:
        while True:
            entry = self.entries.get()
            if isinstance(entry, threading.Event):
                entry.set()
                continue
            try:
                _write(entry)
            except Exception:  # noqa: BLE001 - a broken handler must not end the log for every later request
                pass

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until the entries queued so far are written; False if the writer did not get there in time."""
        if self._thread is None:
            return True
        done = threading.Event()
        self.entries.put(done)
        return done.wait(timeout)


def _write(entry: tuple) -> None:
    created, *args = entry
    record = log.makeRecord(log.name, logging.INFO, __file__, 0, FORMAT, tuple(args), None)
    record.created, record.msecs = created, (created - int(created)) * 1000
    record.relativeCreated = (created - logging._startTime) * 1000
    log.handle(record)


_writer = _Writer()
flush = _writer.flush
atexit.register(flush, 2.0)


class AccessLogMiddleware:
    """Falcon middleware queueing the access log's lines (a no-op below INFO)."""

    def process_request(self, req, resp):
        req.context.started = time.perf_counter()

    def process_response(self, req, resp, resource, req_succeeded):
        if not log.isEnabledFor(logging.INFO):
            return
        started = getattr(req.context, "started", None)
        took = (time.perf_counter() - started) * 1000 if started is not None else 0.0
        identity = getattr(req.context, "identity", None) or {}
        _writer.put(
            (
                time.time(),
                req.method,
                req.path,
                resp.status_code,
                took,
                identity.get("name") or "anonymous",
                getattr(req.context, "request_id", "-"),
            )
        )
