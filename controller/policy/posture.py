"""Posture checks as pure functions: version ranges, normalisation and the pass rules.

A check record (snake_case, as stored) is evaluated against the posture data an
identity reported (:class:`controller.model.posture_data.PostureData` keeps it)
and the state of one API session. Nothing here touches the store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from controller.clock import later, parse_rfc3339, rfc3339

#: the grace period after a wake or unlock before an MFA re-prompt fails the check
PROMPT_GRACE = timedelta(minutes=5)
_COMPARATOR = re.compile(r"^(>=|<=|!=|==|>|<|=)?\s*(\S+)$")
_VERSION = re.compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:[-+.].*)?$")


# -- semantic version ranges (">=10.0.19041 <11.0.0 || 12.x") ------------------------
def parse_version(text) -> tuple[int, int, int] | None:
    """A tolerant ``major[.minor[.patch]]`` (pre-release and build ignored); None if unparseable."""
    if not isinstance(text, str):
        return None
    match = _VERSION.match(text.strip())
    if match is None:
        return None
    try:
        return tuple(int(part or 0) for part in match.groups())  # type: ignore[return-value]
    except ValueError:  # more digits than int() converts (a hostile posture response)
        return None


def _comparator(token: str):
    match = _COMPARATOR.match(token)
    if match is None:
        raise ValueError(f"invalid version range entry {token!r}")
    op, version = match.group(1) or "=", match.group(2)
    wildcard = re.match(r"^v?(\d+)(?:\.(\d+|[xX*]))?(?:\.([xX*]))?$", version)
    if op == "=" and wildcard and any(part in ("x", "X", "*") for part in wildcard.groups() if part):
        major, minor = int(wildcard.group(1)), wildcard.group(2)
        if minor is None or not minor.isdigit():
            return [(">=", (major, 0, 0)), ("<", (major + 1, 0, 0))]
        return [(">=", (major, int(minor), 0)), ("<", (major, int(minor) + 1, 0))]
    parsed = parse_version(version)
    if parsed is None:
        raise ValueError(f"invalid version {version!r}")
    return [("=" if op == "==" else op, parsed)]


def parse_range(text: str) -> list[list[tuple[str, tuple[int, int, int]]]]:
    """OR-groups of AND-ed comparators; ValueError if the range is not valid."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("empty version range")
    groups = []
    for part in text.split("||"):
        tokens = re.sub(r"(>=|<=|!=|==|>|<|=)\s+", r"\1", part.strip()).split()
        if not tokens:
            raise ValueError(f"invalid version range {text!r}")
        group = []
        for token in tokens:
            group.extend(_comparator(token))
        groups.append(group)
    return groups


def satisfies(version: str, range_text: str) -> bool:
    parsed = parse_version(version)
    if parsed is None:
        return False
    try:
        groups = parse_range(range_text)
    except ValueError:
        return False
    tests = {
        "=": parsed.__eq__,
        "!=": parsed.__ne__,
        ">": parsed.__gt__,
        ">=": parsed.__ge__,
        "<": parsed.__lt__,
        "<=": parsed.__le__,
    }
    return any(all(tests[op](bound) for op, bound in group) for group in groups)


def normalize_mac(text) -> str:
    return re.sub(r"[^0-9a-f]", "", str(text).lower())


# -- evaluation ----------------------------------------------------------------------
@dataclass
class Result:
    passing: bool
    timeout: int = -1
    remaining: int = -1
    timeout_at: str | None = None


def evaluate(check: dict, data: dict, session: dict | None, state: dict, now: datetime) -> Result:
    """Whether ``check`` passes for an identity's ``data`` and one API ``session`` (and its ``state``)."""
    kind = check.get("type_id")
    if kind == "OS":
        return Result(_os_passes(check, data.get("os")))
    if kind == "DOMAIN":
        reported = (data.get("domain") or {}).get("domain")
        return Result(isinstance(reported, str) and reported.lower() in {d.lower() for d in check.get("domains") or []})
    if kind == "MAC":
        reported = {normalize_mac(m) for m in (data.get("mac") or {}).get("addresses") or []}
        return Result(bool(reported & {normalize_mac(m) for m in check.get("mac_addresses") or []}))
    if kind == "PROCESS":
        responses = (data.get("processes") or {}).get(check["id"]) or {}
        process = check.get("process") or {}
        return Result(_process_passes(process, _response_for(responses, process.get("path")), single=True))
    if kind == "PROCESS_MULTI":
        responses = (data.get("processes") or {}).get(check["id"]) or {}
        results = [_process_passes(p, _response_for(responses, p.get("path"))) for p in check.get("processes") or []]
        test = all if check.get("semantic") == "AllOf" else any
        return Result(bool(results) and test(results))
    if kind == "MFA":
        return _mfa(check, session, state, now)
    return Result(False)


def _os_passes(check: dict, reported: dict | None) -> bool:
    if not reported or not isinstance(reported.get("type"), str):
        return False
    for entry in check.get("operating_systems") or []:
        if str(entry.get("type", "")).lower() != reported["type"].lower():
            continue
        versions = entry.get("versions") or []
        if not versions or any(satisfies(str(reported.get("version") or ""), v) for v in versions):
            return True
    return False


def _response_for(responses: dict, path) -> dict | None:
    if not isinstance(path, str):
        return None
    return responses.get(path.lower())


def _process_passes(process: dict, response: dict | None, single: bool = False) -> bool:
    if not response or not response.get("is_running"):
        return False
    hashes = {h.lower() for h in process.get("hashes") or []}
    if hashes and str(response.get("hash") or "").lower() not in hashes:
        return False
    signers = {s.lower() for s in response.get("signer_fingerprints") or []}
    wanted = [process.get("signer_fingerprint")] if single else process.get("signer_fingerprints") or []
    wanted = [w.lower() for w in wanted if w]
    return not wanted or any(w in signers for w in wanted)


def _mfa(check: dict, session: dict | None, state: dict, now: datetime) -> Result:
    timeout = int(check.get("timeout_seconds") or -1)
    timeout = timeout if timeout > 0 else -1
    passed_at = _mfa_passed_at(session, state)
    if passed_at is None:
        return Result(False, timeout, 0 if timeout > 0 else -1)
    passing, remaining, timeout_at = True, -1, None
    if timeout > 0:
        end = later(passed_at, seconds=timeout)
        remaining = max(0, int((end - now).total_seconds()))
        timeout_at = rfc3339(end)
        passing = end > now
    for flag, key in (("prompt_on_wake", "woken_at"), ("prompt_on_unlock", "unlocked_at")):
        event = state.get(key)
        if check.get(flag) and event and parse_rfc3339(event) > passed_at:
            grace_end = parse_rfc3339(event) + PROMPT_GRACE
            passing = passing and grace_end > now
            left = max(0, int((grace_end - now).total_seconds()))
            remaining = left if remaining < 0 else min(remaining, left)
            timeout_at = rfc3339(grace_end)
    return Result(passing, timeout, remaining, timeout_at)


def _mfa_passed_at(session: dict | None, state: dict) -> datetime | None:
    if state.get("mfa_passed_at"):
        return parse_rfc3339(state["mfa_passed_at"])
    if not session or not session.get("is_mfa_complete"):
        return None
    stamp = session.get("mfa_completed_at") or session.get("updated_at") or session.get("created_at")
    return parse_rfc3339(stamp) if stamp else None
