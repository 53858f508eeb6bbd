"""The WSGI side of the HTTP server: environ from an h11 request, the app run in a worker.

The event loop builds the environ (it owns the h11 connection) and a worker
thread runs the app. The worker hands the response back as h11 events through
``emit``, a thread-safe callable the loop provides: one call for a whole body,
one per chunk for an iterable body, so a streamed body is written as it comes.
"""
from __future__ import annotations

import io
import logging
import sys
from email.utils import formatdate
from typing import Callable
from urllib.parse import unquote_to_bytes

import h11
import orjson

log = logging.getLogger("controller.serve")

#: the environ key the TLS listener fills with the client's certificate chain
PEER_CERTS_KEY = "controller.peer_certs"

_BASE_ENVIRON = {
    "SCRIPT_NAME": "", "SERVER_PROTOCOL": "HTTP/1.1", "wsgi.version": (1, 0), "wsgi.errors": sys.stderr,
    "wsgi.multithread": True, "wsgi.multiprocess": False, "wsgi.run_once": False, "wsgi.input_terminated": True,
}

Emit = Callable[[list, bool], None]


def build_environ(request: h11.Request, body: bytes, *, server: tuple, peer: tuple, scheme: str,
                  declared_length: int | None = None) -> dict:
    """A PEP 3333 environ for ``request`` whose whole body (or its first part) is ``body``."""
    path, _, query = _origin_form(request.target).partition(b"?")
    environ = {**_BASE_ENVIRON, "REQUEST_METHOD": request.method.decode("ascii"),
               "PATH_INFO": unquote_to_bytes(path).decode("latin-1"), "QUERY_STRING": query.decode("latin-1"),
               "SERVER_NAME": str(server[0]), "SERVER_PORT": str(server[1]),
               "SERVER_PROTOCOL": "HTTP/" + request.http_version.decode("ascii"),
               "REMOTE_ADDR": str(peer[0]), "REMOTE_PORT": str(peer[1]), "wsgi.url_scheme": scheme,
               "wsgi.input": io.BytesIO(body)}
    for name, value in request.headers:
        _add_header(environ, name, value.decode("latin-1"))
    # h11 has removed any chunked framing: the app sees the length of what it can read,
    # or the declared length when the body was too large to be read at all.
    environ["CONTENT_LENGTH"] = str(len(body) if declared_length is None else declared_length)
    environ.pop("HTTP_TRANSFER_ENCODING", None)
    return environ


def _origin_form(target: bytes) -> bytes:
    """``/path?q`` from an origin-form or absolute-form request target."""
    if target.startswith((b"http://", b"https://")):
        rest = target.split(b"://", 1)[1]
        slash = rest.find(b"/")
        return rest[slash:] if slash >= 0 else b"/"
    return target


def _add_header(environ: dict, name: bytes, value: str) -> None:
    if name == b"content-type":
        environ["CONTENT_TYPE"] = value
        return
    if name == b"content-length" or b"_" in name:
        # APPSEC(header-underscores): ``zt_session`` would alias ``zt-session`` once
        # converted to HTTP_ZT_SESSION, so names with underscores are dropped.
        return
    key = "HTTP_" + name.decode("latin-1").upper().replace("-", "_")
    if key in environ:
        value = environ[key] + ("; " if key == "HTTP_COOKIE" else ",") + value
    environ[key] = value


class _StartResponse:
    """``start_response`` recording status and headers for the worker."""

    __slots__ = ("status", "headers")

    def __init__(self):
        self.status: str | None = None
        self.headers: list = []

    def __call__(self, status: str, headers: list, exc_info=None):
        if exc_info and self.status is not None:
            raise exc_info[1].with_traceback(exc_info[2])
        self.status, self.headers = status, headers
        return self._write_unsupported

    @staticmethod
    def _write_unsupported(_data):  # pragma: no cover - no app of ours uses write()
        raise NotImplementedError("the write() callable is not supported; return an iterable")


def _response_event(started: _StartResponse, length: int | None) -> h11.Response:
    code, _, reason = started.status.partition(" ")
    headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in started.headers]
    names = {name.lower() for name, _ in headers}
    if length is not None and b"content-length" not in names and b"transfer-encoding" not in names:
        headers.append((b"content-length", str(length).encode()))
    if b"date" not in names:
        headers.append((b"date", formatdate(usegmt=True).encode()))
    return h11.Response(status_code=int(code), reason=reason.encode("latin-1"), headers=headers)


def run_app(app, environ: dict, emit: Emit) -> None:
    """Run ``app`` for one request in a worker thread, emitting the response's h11 events."""
    started = _StartResponse()
    head_only = environ["REQUEST_METHOD"] == "HEAD"
    try:
        result = app(environ, started)
    except Exception:  # noqa: BLE001 - the app's own handler failed: answer 500, keep serving
        log.exception("unhandled error in the WSGI app")
        emit(_server_error(), True)
        return
    try:
        if isinstance(result, (list, tuple)):
            body = b"".join(result)
            emit([_response_event(started, len(body)), *([] if head_only or not body else [h11.Data(body)]),
                  h11.EndOfMessage()], True)
            return
        _stream(result, started, head_only, emit)
    except Exception:  # noqa: BLE001 - a body that fails mid-way ends the connection
        log.exception("the WSGI app's body failed")
        emit([], False)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()


def _stream(result, started: _StartResponse, head_only: bool, emit: Emit) -> None:
    """Emit the response head with the first chunk, then each chunk as it is produced."""
    head_sent = False
    for chunk in result:
        if not chunk:
            continue
        events = [] if head_sent else [_response_event(started, None)]
        head_sent = True
        emit([*events, *([] if head_only else [h11.Data(bytes(chunk))])], None)
    events = [] if head_sent else [_response_event(started, 0 if started.status else None)]
    emit([*events, h11.EndOfMessage()], True)


def _server_error() -> list:
    body = orjson.dumps({"error": {"code": "UNHANDLED", "message": "an unexpected error occurred"}, "meta": {}})
    return [h11.Response(status_code=500, reason=b"Internal Server Error",
                         headers=[(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                  (b"connection", b"close")]),
            h11.Data(body), h11.EndOfMessage()]
