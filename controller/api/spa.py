"""A single-page app served from a folder at ``/zac``, as the real controller's ``binding: spa`` serves one.

``python -m controller --console DIR`` (``Config.console_dir``) serves DIR's files under ``/zac/``; a path that
names no file answers DIR's ``index.html`` (the app's own router reads the path), so a reload of
``/zac/identities/ID`` works. Fingerprinted assets (``main-4CFX2RAM.js``, ``styles.3f2a9c1b.css``) are cached for a
year as immutable, everything else (``index.html`` first) is revalidated on every use; an ``ETag`` answers a
revalidation with 304. GET and HEAD only, no directory listing, no dot segment, no hidden file, nothing outside
DIR (a symbolic link out of it included): those are 404s in the API's error envelope.
"""

from __future__ import annotations

import mimetypes
import re
from pathlib import Path

import falcon

from controller import errors

PREFIX = "/zac"
#: the sink's pattern: the prefix itself or anything below it
ROUTE = re.compile(r"^/zac(?:/|$)")
INDEX = "index.html"
IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"
#: a build's content hash in a file name: 8+ characters of letters and digits with at least one digit,
#: after a dot or a dash (``main.3f2a9c1b.js``, ``chunk-4CFX2RAM.js``)
FINGERPRINT = re.compile(r"[.-](?=[A-Za-z0-9]*\d)[A-Za-z0-9]{8,}\.[A-Za-z0-9]+$")
TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".webmanifest": "application/manifest+json",
    ".svg": "image/svg+xml",
    ".wasm": "application/wasm",
    ".woff2": "font/woff2",
    ".woff": "font/woff",
    ".ico": "image/x-icon",
    ".txt": "text/plain; charset=utf-8",
}


def content_type(name: str) -> str:
    suffix = Path(name).suffix.lower()
    return TYPES.get(suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"


def cache_control(name: str) -> str:
    return IMMUTABLE if FINGERPRINT.search(name) and name != INDEX else REVALIDATE


class SinglePageApp:
    """A Falcon sink serving ``folder`` at :data:`PREFIX` (the request path is already cleaned of ``//``)."""

    def __init__(self, folder: Path | str):
        self.root = Path(folder).resolve()
        if not (self.root / INDEX).is_file():
            raise ValueError(f"{folder} has no {INDEX}")

    def __call__(self, req, resp, **_params) -> None:
        if req.method not in ("GET", "HEAD"):
            raise falcon.HTTPMethodNotAllowed(["GET", "HEAD"])
        file = self.resolve(req.path[len(PREFIX) :])
        stat = file.stat()
        etag = f'"{stat.st_size:x}-{stat.st_mtime_ns:x}"'
        resp.set_header("Cache-Control", cache_control(file.name))
        resp.set_header("X-Content-Type-Options", "nosniff")
        resp.set_header("ETag", etag)
        resp.content_type = content_type(file.name)
        if etag in [tag.strip() for tag in (req.get_header("If-None-Match") or "").split(",")]:
            resp.status = falcon.HTTP_304
            return
        resp.status = falcon.HTTP_200
        if req.method == "HEAD":
            resp.content_length = stat.st_size
            return
        resp.data = file.read_bytes()

    def resolve(self, rest: str) -> Path:
        """The file ``rest`` names under the folder, or ``index.html`` when it names none; 404 when refused."""
        parts = [part for part in rest.split("/") if part]
        if any(part.startswith(".") or "\\" in part or "\0" in part for part in parts):
            # dot segments (``..``, also when sent as ``%2e%2e``) and hidden files
            raise errors.NotFound()
        candidate = self.root.joinpath(*parts).resolve() if parts else self.root / INDEX
        if not candidate.is_relative_to(self.root):
            raise errors.NotFound()  # a symbolic link leading out of the folder
        if candidate.is_file():
            return candidate
        return self.root / INDEX  # a route of the app itself, or a folder: never a listing
