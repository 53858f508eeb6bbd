"""Which routers are online, where they listen, and which identities hold a connection to which router.

Kept in memory only, as the real controller keeps router state from the
control channel: a restart starts with every router offline. Connections are
counted per router, so a router that goes away without a word (killed, cut off)
takes its identities' connections with it when it is marked offline.
"""

from __future__ import annotations

import threading
from collections import Counter
from urllib.parse import urlsplit


class RouterPresence:
    """Online routers (id -> advertised URL) and identities' connection counts per router."""

    def __init__(self):
        self._lock = threading.Lock()
        self._urls: dict[str, str] = {}
        #: router id -> the build it reported when it came online (``version``, ``revision``, ``buildDate``, ...)
        self._versions: dict[str, dict] = {}
        #: router id -> identity id -> open channels; ``_totals`` sums them over routers
        self._connections: dict[str, Counter[str]] = {}
        self._totals: Counter[str] = Counter()

    def online(self, router_id: str, url: str, version_info: dict | None = None) -> None:
        with self._lock:
            self._urls[router_id] = url
            self._versions[router_id] = dict(version_info or {})

    def offline(self, router_id: str) -> None:
        """The router is gone: its URL and every connection it held."""
        with self._lock:
            self._urls.pop(router_id, None)
            self._versions.pop(router_id, None)
            for identity_id, count in self._connections.pop(router_id, Counter()).items():
                self._add(identity_id, -count)

    def is_online(self, router_id: str) -> bool:
        return router_id in self._urls

    def online_routers(self) -> dict[str, str]:
        """Every online router's advertised URL, by id (a copy)."""
        with self._lock:
            return dict(self._urls)

    def version_info(self, router_id: str) -> dict:
        """The build an online router reported (a copy; ``{}`` when offline or it reported none)."""
        return dict(self._versions.get(router_id) or {})

    def protocols(self, router_id: str) -> dict:
        """``{"tls": "tls://host:port"}`` for an online router, else ``{}``."""
        url = self._urls.get(router_id)
        return {urlsplit(url).scheme: url} if url else {}

    def hostname(self, router_id: str) -> str:
        url = self._urls.get(router_id)
        return urlsplit(url).hostname or "" if url else ""

    def connection_changed(self, identity_id: str, connected: bool, router_id: str = "") -> None:
        with self._lock:
            per_router = self._connections.setdefault(router_id, Counter())
            if connected:
                per_router[identity_id] += 1
                self._add(identity_id, 1)
            elif per_router.get(identity_id, 0) > 0:
                per_router[identity_id] -= 1
                if per_router[identity_id] <= 0:
                    del per_router[identity_id]
                self._add(identity_id, -1)

    def _add(self, identity_id: str, delta: int) -> None:
        self._totals[identity_id] += delta
        if self._totals[identity_id] <= 0:
            del self._totals[identity_id]

    def is_connected(self, identity_id: str) -> bool:
        return self._totals.get(identity_id, 0) > 0
