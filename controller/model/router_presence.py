"""Which routers are online, where they listen, and which identities hold a connection.

Kept in memory only, as the real controller keeps router state from the
control channel: a restart starts with every router offline.
"""

from __future__ import annotations

import threading
from collections import Counter
from urllib.parse import urlsplit


class RouterPresence:
    """Online routers (id -> advertised URL) and identities' router connection counts."""

    def __init__(self):
        self._lock = threading.Lock()
        self._urls: dict[str, str] = {}
        self._connections: Counter[str] = Counter()

    def online(self, router_id: str, url: str) -> None:
        with self._lock:
            self._urls[router_id] = url

    def offline(self, router_id: str) -> None:
        with self._lock:
            self._urls.pop(router_id, None)

    def is_online(self, router_id: str) -> bool:
        return router_id in self._urls

    def protocols(self, router_id: str) -> dict:
        """``{"tls": "tls://host:port"}`` for an online router, else ``{}``."""
        url = self._urls.get(router_id)
        return {urlsplit(url).scheme: url} if url else {}

    def hostname(self, router_id: str) -> str:
        url = self._urls.get(router_id)
        return urlsplit(url).hostname or "" if url else ""

    def connection_changed(self, identity_id: str, connected: bool) -> None:
        with self._lock:
            self._connections[identity_id] += 1 if connected else -1
            if self._connections[identity_id] <= 0:
                del self._connections[identity_id]

    def is_connected(self, identity_id: str) -> bool:
        return self._connections.get(identity_id, 0) > 0
