"""Posture data reported by identities, and the failed service requests it caused.

Both live in memory only, like the real controller: they are lost on restart and
removed with their identity or API session.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Callable

from controller import errors
from controller.clock import Clock, rfc3339
from controller.policy.posture import Result, evaluate

RESPONSE_TYPES = ("OS", "PROCESS", "DOMAIN", "MAC", "MFA", "PROCESS_MULTI", "ENDPOINT_STATE")
REQUIRED = {
    "OS": ("type", "version"),
    "DOMAIN": ("domain",),
    "MAC": ("macAddresses",),
    "PROCESS": ("path",),
    "PROCESS_MULTI": ("path",),
}
MAX_FAILED = 100


class PostureData:
    """Per identity: latest OS, domain, MAC, processes per check; per API session: MFA and endpoint state."""

    def __init__(self, *, clock: Clock, events, mfa_reprompted: Callable[[str, dict, list[str]], list[dict]]):
        """``mfa_reprompted`` reaches the service access checks, which are built after (they evaluate posture)."""
        self.clock, self.events, self.mfa_reprompted = clock, events, mfa_reprompted
        self._lock = threading.Lock()
        self._identities: dict[str, dict] = {}
        self._sessions: dict[str, dict] = {}
        self._failed: dict[str, deque] = {}

    # -- writes --------------------------------------------------------------------
    def submit(self, identity_id: str, session: dict, response: dict) -> list[dict]:
        """Record one posture response; returns the services an MFA re-prompt now affects."""
        check_required(response)
        kind = response["typeId"]
        now = rfc3339(self.clock.now())
        base = {"posture_check_id": response["id"], "last_updated_at": now, "timed_out": False}
        changed: list[str] = []
        with self._lock:
            data = self._identities.setdefault(identity_id, {})
            state = self._sessions.setdefault(session["id"], {"identity_id": identity_id})
            if kind == "OS":
                data["os"] = {
                    **base,
                    "type": response["type"],
                    "version": response["version"],
                    "build": response.get("build") or "",
                }
            elif kind == "DOMAIN":
                data["domain"] = {**base, "domain": response["domain"]}
            elif kind == "MAC":
                data["mac"] = {**base, "addresses": list(response["macAddresses"])}
            elif kind in ("PROCESS", "PROCESS_MULTI"):
                per_check = data.setdefault("processes", {}).setdefault(response["id"], {})
                per_check[response["path"].lower()] = {
                    **base,
                    "path": response["path"],
                    "is_running": bool(response.get("isRunning")),
                    "hash": response.get("hash") or "",
                    "signer_fingerprints": list(response.get("signerFingerprints") or []),
                }
            elif kind == "ENDPOINT_STATE":
                changed = self._endpoint_state(state, response, now)
        # NOTE(network): outside our lock: the engine is read under the store lock, which cascades hold
        # while they call forget_*; taking the two locks in one order only avoids a deadlock.
        if kind == "ENDPOINT_STATE" and changed:
            return self.mfa_reprompted(identity_id, session, changed)
        return []

    @staticmethod
    def _endpoint_state(state: dict, response: dict, now: str) -> list[str]:
        changed = []
        if response.get("woken"):
            state["woken_at"] = now
            changed.append("prompt_on_wake")
        if response.get("unlocked"):
            state["unlocked_at"] = now
            changed.append("prompt_on_unlock")
        return changed

    def record_failure(self, identity_id: str, entry: dict) -> None:
        with self._lock:
            self._failed.setdefault(identity_id, deque(maxlen=MAX_FAILED)).append(entry)
        self.events.failed_service_request(identity_id, entry)

    def forget_identity(self, identity: dict) -> None:
        with self._lock:
            self._identities.pop(identity["id"], None)
            self._failed.pop(identity["id"], None)

    def forget_session(self, session: dict) -> None:
        with self._lock:
            self._sessions.pop(session["id"], None)

    # -- reads ---------------------------------------------------------------------
    def evaluate(self, check: dict, identity_id: str, session: dict | None) -> Result:
        data = self._identities.get(identity_id) or {}
        state = self._sessions.get(session["id"], {}) if session else {}
        return evaluate(check, data, session, state, self.clock.now())

    def failed_requests(self, identity_id: str) -> list[dict]:
        return list(self._failed.get(identity_id, ()))

    def of_identity(self, identity_id: str) -> dict:
        """The identity's reported data: ``os``, ``domain``, ``mac``, ``processes`` (per check, per path)."""
        return self._identities.get(identity_id) or {}

    def session_states(self, identity_id: str) -> dict[str, dict]:
        """Per API session of the identity: its wake, unlock and MFA state."""
        return {sid: state for sid, state in list(self._sessions.items()) if state.get("identity_id") == identity_id}


def check_required(response: dict) -> None:
    """The fields its type needs (the schema cannot say it: ``typeId`` picks them)."""
    for name in REQUIRED.get(response["typeId"], ()):
        if response.get(name) is None:
            raise errors.FieldError(name, f"{name} in body is required", None)
