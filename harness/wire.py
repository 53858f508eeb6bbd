"""``ApiError`` and ``Api``, kept importable from here (the README imports ``ApiError`` from this module).

There is one client, :class:`harness.client.ZitiClient`, and it sends raw
requests too (``mgmt``, ``edge``, ``raw``). ``Api`` is that client with the
login the wire-format tests were written against: ``login`` returns another
client carrying the session and leaves this one anonymous (``ZitiClient.signed_in``).
"""

from __future__ import annotations

from harness.client import ApiError, ZitiClient

MANAGEMENT_PREFIX = "/edge/management/v1"
CLIENT_PREFIX = "/edge/client/v1"

__all__ = ["Api", "ApiError", "CLIENT_PREFIX", "MANAGEMENT_PREFIX"]


class Api(ZitiClient):
    """A :class:`ZitiClient` whose ``login`` returns a new client (see :meth:`ZitiClient.signed_in`)."""

    def login(self, username: str, password: str, api: str = "management", **body) -> "Api":
        return self.signed_in(username, password, api=api, **body)
