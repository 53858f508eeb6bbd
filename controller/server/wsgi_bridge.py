"""The WSGI side of the HTTP server: the environ of a request, the app run in a worker.

The event loop parses a request into a ``RequestHead`` and a worker thread runs
the app. The worker frames the response itself and hands the bytes back through
``emit(data, outcome)``, a thread-safe callable the loop provides: one call for
a whole body, one per chunk for an iterable body, so a streamed body is written
as it is produced. ``outcome`` tells the loop what follows the bytes.
"""

from __future__ import annotations

import io
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from urllib.parse import unquote_to_bytes

import orjson
from cryptography import x509

from controller import errors

log = logging.getLogger("controller.server.serve")

#: the environ key the TLS listener fills with the client's certificate chain
PEER_CERTS_KEY = "controller.peer_certs"


def peer_certificates(ders: tuple[bytes, ...]) -> list[x509.Certificate]:
    """A request's own parsed copies of its connection's chain (DER, leaf first); ValueError when one is malformed."""
    return [x509.load_der_x509_certificate(data) for data in ders]


MORE, DONE, CLOSE, ABORT = "more", "done", "close", "abort"  # what follows the emitted bytes

Emit = Callable[[bytes, str], None]

_BASE_ENVIRON = {
    "SCRIPT_NAME": "",
    "wsgi.version": (1, 0),
    "wsgi.errors": sys.stderr,
    "wsgi.multithread": True,
    "wsgi.multiprocess": False,
    "wsgi.run_once": False,
    "wsgi.input_terminated": True,
}
_NO_BODY = {204, 304}


@dataclass
class RequestHead:
    """What the parser saw of one request."""

    method: str = ""
    target: bytes = b""
    version: str = "1.1"
    headers: list = field(default_factory=list)
    keep_alive: bool = True
    declared_length: int | None = None


def build_environ(
    head: RequestHead, body: bytes, *, server: tuple, peer: tuple, scheme: str, too_large: bool = False
) -> dict:
    """A PEP 3333 environ for ``head`` whose whole body (or, ``too_large``, its first part) is ``body``."""
    path, _, query = _origin_form(head.target).partition(b"?")
    environ = {
        **_BASE_ENVIRON,
        "REQUEST_METHOD": head.method,
        "PATH_INFO": unquote_to_bytes(path).decode("latin-1"),
        "QUERY_STRING": query.decode("latin-1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1]),
        "SERVER_PROTOCOL": f"HTTP/{head.version}",
        "REMOTE_ADDR": str(peer[0]),
        "REMOTE_PORT": str(peer[1]),
        "wsgi.url_scheme": scheme,
        "wsgi.input": io.BytesIO(body),
    }
    for name, value in head.headers:
        _add_header(environ, name.lower(), value.decode("latin-1"))
    # Chunked framing is already removed: the app sees the length it can read, or the
    # declared length when the body was too large to be read at all.
    declared = head.declared_length
    environ["CONTENT_LENGTH"] = str(declared if too_large and declared is not None else len(body))
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


class _Date:
    """The ``Date`` header value, formatted once per second."""

    second, value = 0, b""

    @classmethod
    def now(cls) -> bytes:
        second = int(time.time())
        if second != cls.second:
            cls.second, cls.value = second, formatdate(second, usegmt=True).encode()
        return cls.value


class Response:
    """``start_response`` plus the framing of one response (runs in the worker)."""

    def __init__(self, head: RequestHead, emit: Emit):
        self.request, self.emit = head, emit
        self.status: str | None = None
        self.headers: list = []
        self.length: int | None = None  # declared by the app
        self.sent = 0
        self.chunked = False
        self.keep_alive = head.keep_alive
        self.head_sent = False

    def __call__(self, status: str, headers: list, exc_info=None):
        if exc_info and self.head_sent:
            raise exc_info[1].with_traceback(exc_info[2])
        self.status, self.headers = status, headers
        return self._write_unsupported

    @staticmethod
    def _write_unsupported(_data):  # pragma: no cover - no app of ours uses write()
        raise NotImplementedError("the write() callable is not supported; return an iterable")

    def _head(self, known_length: int | None) -> bytes:
        """The status line and headers, choosing the framing of the body."""
        code = int(self.status[:3])
        lines = [f"HTTP/1.1 {self.status}\r\n".encode("latin-1")]
        names = set()
        for name, value in self.headers:
            lower = name.lower()
            names.add(lower)
            if lower == "content-length":
                self.length = int(value)
            elif lower == "connection" and value.lower() == "close":
                self.keep_alive = False
            if "\r" in value or "\n" in value or "\r" in name or "\n" in name:
                raise ValueError(f"header {name!r} contains a line break")  # response splitting
            lines.append(f"{name}: {value}\r\n".encode("latin-1"))
        if code in _NO_BODY or code < 200:
            self.length = 0
        elif self.length is None and known_length is not None:
            self.length = known_length
            lines.append(b"Content-Length: %d\r\n" % known_length)
        elif self.length is None and "transfer-encoding" not in names:
            self.chunked = self.request.version == "1.1"
            lines.append(b"Transfer-Encoding: chunked\r\n" if self.chunked else b"")
            self.keep_alive = self.keep_alive and self.chunked  # HTTP/1.0: the close ends the body
        if "date" not in names:
            lines.append(b"Date: " + _Date.now() + b"\r\n")
        if not self.keep_alive:
            lines.append(b"Connection: close\r\n")
        elif self.request.version == "1.0":
            lines.append(b"Connection: keep-alive\r\n")
        self.head_sent = True
        return b"".join(lines) + b"\r\n"

    def _body(self, chunk: bytes) -> bytes:
        if self.request.method == "HEAD" or not chunk:
            return b""
        if self.chunked:
            return b"%x\r\n%s\r\n" % (len(chunk), chunk)
        if self.length is not None:
            chunk = chunk[: max(0, self.length - self.sent)]  # never more than was declared
        self.sent += len(chunk)
        return chunk

    def _end(self) -> tuple[bytes, str]:
        if self.chunked and self.request.method != "HEAD":
            return b"0\r\n\r\n", DONE if self.keep_alive else CLOSE
        if self.request.method != "HEAD" and self.length is not None and self.sent < self.length:
            return b"", ABORT  # fewer bytes than declared: only a broken connection says so
        return b"", DONE if self.keep_alive else CLOSE

    def whole(self, body: bytes) -> None:
        """Emit a response whose body is known in full."""
        data = self._head(len(body)) + self._body(body)
        tail, outcome = self._end()
        self.emit(data + tail, outcome)

    def stream(self, chunks) -> None:
        """Emit the head with the first chunk, then each chunk as the app produces it."""
        for chunk in chunks:
            if chunk:
                self.emit((b"" if self.head_sent else self._head(None)) + self._body(bytes(chunk)), MORE)
        head = b"" if self.head_sent else self._head(0 if self.length is None else None)
        tail, outcome = self._end()
        self.emit(head + tail, outcome)


def run_app(app, environ: dict, head: RequestHead, emit: Emit) -> None:
    """Run ``app`` for one request in a worker thread, emitting the framed response."""
    response = Response(head, emit)
    try:
        result = app(environ, response)
    except Exception:
        log.exception("unhandled error in the WSGI app")
        emit(_server_error(), CLOSE)
        return
    try:
        if isinstance(result, (list, tuple)):
            response.whole(b"".join(result))
        else:
            response.stream(result)
    except Exception:
        log.exception("the WSGI app's body failed")
        emit(b"" if response.head_sent else _server_error(), ABORT if response.head_sent else CLOSE)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()


def _server_error() -> bytes:
    body = orjson.dumps({"error": {"code": errors.UNHANDLED, "message": "an unexpected error occurred"}, "meta": {}})
    return plain_response(500, "Internal Server Error", body)


def plain_response(status: int, reason: str, body: bytes) -> bytes:
    """A complete JSON response that closes the connection (for the server's own errors)."""
    return (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        f"Connection: close\r\n\r\n"
    ).encode() + body
