"""What runs before every request: the authentication rate limit.

The limit is off unless configured: ``Config.extra["auth_rate_limit"] =
{"max_requests": 10, "window_seconds": 1, "per_ip": False}``. Authentication
requests past the limit within the sliding window get 429
``SERVER_TOO_MANY_REQUESTS``, the real controller's auth rate limiter answer.
The window is measured on the controller clock, so tests advance it instead of
sleeping.
"""

from __future__ import annotations

import threading
from collections import defaultdict, deque
from dataclasses import dataclass
from datetime import datetime, timedelta

from controller import errors
from controller.clock import Clock
from controller.errors import ControllerError

AUTH_PATH_SUFFIXES = (
    "/authenticate",
    "/authenticate/mfa",
    "/oidc/login/password",
    "/oidc/login/username",
    "/oidc/login/cert",
    "/oidc/login/ext-jwt",
    "/oidc/login/totp",
)
TOO_MANY = errors.SERVER_TOO_MANY_REQUESTS
TOO_MANY_MESSAGE = (
    "Too many requests to alter state have been issued. Please slow your request rate or try again later."
)


@dataclass(frozen=True)
class RequestInfo:
    """What the guards see of a request: no HTTP object, just its facts (the API layer fills it in)."""

    method: str
    path: str
    remote_address: str = ""


class AuthRateLimiter:
    """A sliding-window limit on authentication requests."""

    def __init__(self, *, clock: Clock, settings: dict | None):
        """``settings``: ``Config.extra["auth_rate_limit"]`` (None or no ``max_requests``: no limit)."""
        self.clock, self._settings = clock, settings
        self._lock = threading.Lock()
        self._hits: dict[str, deque[datetime]] = defaultdict(deque)

    def settings(self) -> dict | None:
        value = self._settings
        if not value or not int(value.get("max_requests") or 0):
            return None
        return value

    def check(self, request: RequestInfo) -> None:
        limit = self.settings()
        if limit is None or request.method != "POST" or not request.path.endswith(AUTH_PATH_SUFFIXES):
            return
        window = timedelta(seconds=float(limit.get("window_seconds") or 1))
        key = request.remote_address if limit.get("per_ip") else "*"
        now = self.clock.now()
        with self._lock:
            hits = self._hits[key]
            while hits and hits[0] <= now - window:
                hits.popleft()
            if len(hits) >= int(limit["max_requests"]):
                raise ControllerError(TOO_MANY, TOO_MANY_MESSAGE)
            hits.append(now)


class RequestGuard:
    """What runs before every request (the API layer's ``GuardMiddleware`` calls it)."""

    def __init__(self, *, auth_limiter: AuthRateLimiter):
        self.auth_limiter = auth_limiter

    @property
    def active(self) -> bool:
        """Whether ``check`` can refuse anything (with no limit configured, it never does)."""
        return self.auth_limiter.settings() is not None

    def check(self, request: RequestInfo) -> None:
        self.auth_limiter.check(request)
