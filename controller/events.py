"""The controller's event timeline: JSON lines in the data folder plus an in-process stream.

Formats follow the real controller where it has them:

* ``entityChange`` (``eventType`` created/updated/deleted, ``entityType``,
  ``initialState``, ``finalState``) for every committed record change;
* ``edge.apiSessions`` and ``edge.sessions`` (``event_type`` created/deleted);
* ``authentication`` (``event_type`` success/fail/logout) for logins and logouts.

Events the real controller has no format for use the same envelope:
``edge.mfa`` (MFA changes), ``edge.failedServiceRequests``, ``database`` and
``edge.trace``; the edge router (through ``controller/router_link/``) emits
``circuit`` (created/failed/deleted, with bytes moved each way), ``terminator``
(created/failed/deleted), ``edge.router.connections`` and ``router``
(online/offline).

APPSEC(events): every event passes :func:`redact` before it is stored,
written or handed to a subscriber, so password hashes, salts, tokens, JWTs,
private keys, TOTP secrets and recovery codes never leave the store.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import deque
from datetime import datetime
from typing import Any, Callable

import orjson

from controller.clock import Clock, parse_rfc3339, rfc3339
from controller.config import Config
from controller.event_file import RotatingFile
from controller.ids import Ids

log = logging.getLogger("controller.events")

EVENTS_FILE = "events.jsonl"
#: after a failed write (a full disk) the events file is tried again at most this often (controller clock)
FILE_RETRY_SECONDS = 30.0
DEFAULT_BUFFER = 10_000
REDACTED = "<redacted>"
#: keys (any nesting, any case, ``_`` ignored) ending so never show their values in an event
SENSITIVE_SUFFIXES = ("password", "hash", "salt", "secret", "token", "jwt", "privatekey", "keypem", "recoverycodes")
#: keys that end like a secret but name a policy section, not a secret
NOT_SENSITIVE = frozenset({"extjwt"})
Subscriber = Callable[[dict], None]


def redact(value: Any) -> Any:
    """``value`` with every sensitive key's value replaced: a copy where one was, else ``value`` itself.

    Nothing to replace (most records) costs one walk and no copy. NOTE(events):
    events therefore share the store's records, which nobody mutates (the store
    replaces a record, never changes it), so events must be treated as read-only too.
    """
    if isinstance(value, dict):
        if _names_a_secret(tuple(value)) and any(v is not None and _sensitive(k) for k, v in value.items()):
            return _redacted_dict(value)
        for item in value.values():
            if isinstance(item, (dict, list)) and redact(item) is not item:
                return _redacted_dict(value)
        return value
    if isinstance(value, list):
        if any(isinstance(item, (dict, list)) and redact(item) is not item for item in value):
            return [redact(item) for item in value]
    return value


@functools.lru_cache(maxsize=1024)  # records of one table share their keys: one lookup per dict
def _names_a_secret(keys: tuple) -> bool:
    return any(map(_sensitive, keys))


def _redacted_dict(value: dict) -> dict:
    return {key: REDACTED if item is not None and _sensitive(key) else redact(item) for key, item in value.items()}


@functools.lru_cache(maxsize=4096)  # a few hundred distinct keys; redaction runs on every entity change
def _sensitive(key: Any) -> bool:
    folded = str(key).lower().replace("_", "").replace("-", "")
    return folded not in NOT_SENSITIVE and folded.endswith(SENSITIVE_SUFFIXES)


def entity_type(table: str) -> str:
    """``api_sessions`` -> ``apiSessions`` (the real controller's entity type names)."""
    head, *rest = table.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _metadata(context) -> dict:
    """An entity change event's ``metadata``: the source its write's ``ChangeContext`` names."""
    return {
        "source": {
            "type": context.source_type,
            "method": context.method,
            "path": context.path,
            "requestId": context.request_id,
            "remoteAddr": context.remote_addr,
        }
    }


class Events:
    """Emits, keeps, writes and publishes events; a store listener feeds entity changes."""

    def __init__(
        self,
        *,
        config: Config,
        clock: Clock,
        ids: Ids,
        instance_id: str,
        trace_id_of: Callable[[str], str | None] = lambda identity_id: None,
    ):
        """``trace_id_of(identity_id)``: the trace an identity's events carry (``TraceManager``), or None.

        The registry registers ``on_changes`` as a store listener.
        """
        self.clock, self.ids, self.instance_id, self._trace_id_of = clock, ids, instance_id, trace_id_of
        self._lock = threading.RLock()
        self._buffer: deque[dict] = deque(maxlen=int(config.extra.get("event_buffer", DEFAULT_BUFFER)))
        self._subscribers: list[Subscriber] = []
        self._file_failed_at: datetime | None = None  # when the last write failed; None while writing
        self._file_missed = 0  # events kept only in memory since then
        self.path = config.data_dir / EVENTS_FILE if config.data_dir else None
        self._file = RotatingFile(self.path, config.events_max_bytes, config.events_keep_files) if self.path else None

    # -- emitting ------------------------------------------------------------
    def emit(self, namespace: str, event_type: str | None = None, **fields) -> dict:
        """Record one event stamped with the controller clock; return it."""
        event = {"namespace": namespace, "event_src_id": self.instance_id, "timestamp": rfc3339(self.clock.now())}
        if event_type is not None:
            event["event_type"] = event_type
        event.update(fields)
        return self._publish(event)

    def _publish(self, event: dict) -> dict:
        identity_id = event.get("identity_id")
        if identity_id:
            trace_id = self._trace_id_of(identity_id)
            if trace_id:
                event["trace_id"] = trace_id
        event = redact(event)
        with self._lock:
            self._buffer.append(event)
            self._write(event)
            subscribers = list(self._subscribers)
        for fn in subscribers:
            try:
                fn(event)
            except Exception:
                log.exception("events: subscriber %r failed", fn)
        return event

    def _write(self, event: dict) -> None:
        if self._file is None:
            return
        failed_at = self._file_failed_at
        if failed_at is not None and (self.clock.now() - failed_at).total_seconds() < FILE_RETRY_SECONDS:
            self._file_missed += 1
            return
        try:
            self._file.write(orjson.dumps(event) + b"\n")
        except OSError as ex:
            # NOTE(events): a full disk must not break requests; the in-process stream goes on, and the
            # file is tried again every FILE_RETRY_SECONDS (one write each: bounded), logged once.
            if failed_at is None:
                log.warning(
                    "events: cannot write %s, keeping events in memory only and retrying every %g s: %s",
                    self.path,
                    FILE_RETRY_SECONDS,
                    ex.strerror,
                )
            self._file_failed_at = self.clock.now()
            self._file_missed += 1
            return
        if failed_at is not None:
            log.warning(
                "events: writing %s again; %d events meanwhile were kept in memory only", self.path, self._file_missed
            )
            self._file_failed_at, self._file_missed = None, 0

    # -- reading -------------------------------------------------------------
    def query(
        self,
        namespace: str | None = None,
        *,
        event_type: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        where: Callable[[dict], bool] | None = None,
        limit: int | None = None,
        **match,
    ) -> list[dict]:
        """Events kept in memory, oldest first, filtered.

        ``event_type`` matches ``event_type`` or ``eventType``; other keyword
        arguments match event fields exactly (``entityType="identities"``).
        """
        since_dt = parse_rfc3339(since) if isinstance(since, str) else since
        until_dt = parse_rfc3339(until) if isinstance(until, str) else until
        with self._lock:
            events = list(self._buffer)
        out = []
        for event in events:
            if namespace is not None and event.get("namespace") != namespace:
                continue
            if event_type is not None and event_type not in (event.get("event_type"), event.get("eventType")):
                continue
            if any(event.get(key) != value for key, value in match.items()):
                continue
            if since_dt or until_dt:
                stamp = parse_rfc3339(event["timestamp"])
                if (since_dt and stamp < since_dt) or (until_dt and stamp > until_dt):
                    continue
            if where is not None and not where(event):
                continue
            out.append(event)
        return out[-limit:] if limit else out

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        """Call ``fn(event)`` for every later event; returns the unsubscribe function.

        NOTE(events): entity changes are published under the store lock, so
        ``fn`` must be quick and must not wait for another thread's request.
        """
        with self._lock:
            self._subscribers.append(fn)

        def unsubscribe() -> None:
            with self._lock:
                if fn in self._subscribers:
                    self._subscribers.remove(fn)

        return unsubscribe

    # -- store listener ------------------------------------------------------
    def on_changes(self, changes) -> None:
        for change in changes:
            kind = "created" if change.old is None else "deleted" if change.new is None else "updated"
            event = {
                "namespace": "entityChange",
                "event_src_id": self.instance_id,
                "timestamp": rfc3339(self.clock.now()),
                "eventId": self.ids.uuid(),
                "eventType": kind,
                "entityType": entity_type(change.table),
                "entityId": change.key,
                "isParentEvent": False,
            }
            if change.context is not None:
                event["metadata"] = _metadata(change.context)
            if change.old is not None:
                event["initialState"] = change.old
            if change.new is not None:
                event["finalState"] = change.new
            self._publish(event)
            if kind != "updated" and change.table in ("api_sessions", "sessions"):
                self._session_event(change.table, kind, change.new or change.old)

    def _session_event(self, table: str, kind: str, record: dict) -> None:
        if table == "api_sessions":
            self.emit(
                "edge.apiSessions",
                kind,
                id=record["id"],
                type="legacy",
                identity_id=record.get("identity_id"),
                ip_address=record.get("ip_address") or "",
            )
            return
        self.emit(
            "edge.sessions",
            kind,
            id=record["id"],
            session_type=record.get("type"),
            api_session_id=record.get("api_session_id"),
            identity_id=record.get("identity_id"),
            service_id=record.get("service_id"),
        )

    # -- typed helpers for the feature areas -----------------------------------
    def authentication(
        self,
        success: bool,
        method: str,
        *,
        identity_id: str | None = None,
        authenticator_id: str | None = None,
        remote_address: str = "",
        reason: str | None = None,
        **extra,
    ) -> dict:
        fields = {
            "auth_method": method,
            "identity_id": identity_id,
            "authenticator_id": authenticator_id,
            "remote_address": remote_address,
            "success": success,
            **extra,
        }
        if reason:
            fields["reason"] = reason
        return self.emit("authentication", "success" if success else "fail", **fields)

    def logout(self, session: dict, remote_address: str = "") -> dict:
        return self.emit(
            "authentication",
            "logout",
            api_session_id=session["id"],
            identity_id=session.get("identity_id"),
            remote_address=remote_address,
        )

    def mfa(self, event_type: str, identity_id: str, **fields) -> dict:
        return self.emit("edge.mfa", event_type, identity_id=identity_id, **fields)

    def failed_service_request(self, identity_id: str, entry: dict) -> dict:
        """A service request refused by posture: ``entry`` is the identity's failed-service-request entry."""
        return self.emit(
            "edge.failedServiceRequests",
            "failed",
            identity_id=identity_id,
            api_session_id=entry.get("apiSessionId"),
            service_id=entry.get("serviceId"),
            service_name=entry.get("serviceName"),
            session_type=entry.get("sessionType"),
            policy_failures=entry.get("policyFailures") or [],
            when=entry.get("when"),
        )

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                try:
                    self._file.close()
                except OSError:
                    pass
