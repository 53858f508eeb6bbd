"""Who made a change: the context a write carries to the listeners of its commit.

The API layer builds one per request and hands it to the manager it calls; the
manager opens its transaction with it, and every ``Change`` of that transaction
carries it (nested transactions inherit it). Writes the controller makes on its
own (sweeps, the router link, bootstrap) carry none. This is OpenZiti's
``change.Context``, passed explicitly to each write instead of read from an
ambient request.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ChangeContext:
    """The source of a change: the kind of source and, for a REST request, what it was."""

    source_type: str
    method: str | None = None
    path: str | None = None
    request_id: str | None = None
    remote_addr: str | None = None

    @classmethod
    def rest(cls, method: str, path: str, request_id: str | None, remote_addr: str | None) -> ChangeContext:
        """A change made while serving a REST request."""
        return cls("rest", method, path, request_id, remote_addr)
