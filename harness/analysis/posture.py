"""Posture checks judged from declared posture data, independently of ``controller.policy.posture``.

The analysis uses this to say which posture checks pass or fail for an
identity. A :class:`PostureState` is what an identity reported (domain, OS,
MAC addresses, whether an API session passed MFA); it is built from a plain
dict or from the management API's ``GET /identities/{id}/posture-data``.
Process checks cannot be judged from that data: they are "unknown" unless the
state names them in ``passing`` or ``failing``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_VERSION = re.compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?")
_TOKEN = re.compile(r"^(>=|<=|!=|==|>|<|=)?v?([\dxX*.]+)")


@dataclass(frozen=True)
class PostureState:
    """What one identity reported; ``None`` fields were never reported."""

    domain: str | None = None
    os_type: str | None = None
    os_version: str | None = None
    mac: frozenset[str] = frozenset()
    mfa: bool = False
    passing: frozenset[str] = frozenset()  # check names taken as passing whatever the data
    failing: frozenset[str] = frozenset()  # check names taken as failing whatever the data

    @classmethod
    def coerce(cls, value: "PostureState | dict | None") -> "PostureState":
        """A state from itself, a plain dict or a ``posture-data`` reply.

        Plain dicts use ``domain``, ``os`` (``{type, version}``), ``mac`` (list),
        ``mfa`` (bool), ``passing`` and ``failing`` (check names).
        """
        if isinstance(value, PostureState):
            return value
        value = value or {}
        if "apiSessionPostureData" in value:
            return cls._from_wire(value)
        os_info = value.get("os") or {}
        return cls(
            domain=value.get("domain") or None,
            os_type=os_info.get("type") or None,
            os_version=os_info.get("version") or None,
            mac=frozenset(map(normalize_mac, value.get("mac") or [])),
            mfa=bool(value.get("mfa")),
            passing=frozenset(value.get("passing") or []),
            failing=frozenset(value.get("failing") or []),
        )

    @classmethod
    def _from_wire(cls, data: dict) -> "PostureState":
        os_info, domain, mac = data.get("os") or {}, data.get("domain") or {}, data.get("mac") or {}
        sessions = (data.get("apiSessionPostureData") or {}).values()
        return cls(
            domain=domain.get("domain") or None,
            os_type=os_info.get("type") or None,
            os_version=os_info.get("version") or None,
            mac=frozenset(map(normalize_mac, mac.get("addresses") or [])),
            mfa=any((s.get("mfa") or {}).get("passedMfa") for s in sessions),
        )


@dataclass(frozen=True)
class CheckResult:
    """One posture check judged for one identity: ``passing`` is None when it cannot be told."""

    name: str
    type: str
    passing: bool | None
    reason: str
    hint: str = field(default="", compare=False)  # what the identity would have to report

    def __str__(self) -> str:
        verdict = {True: "passes", False: "FAILS", None: "not evaluated"}[self.passing]
        return f"{self.name} ({self.type}) {verdict}: {self.reason}"


def normalize_mac(text) -> str:
    return re.sub(r"[^0-9a-f]", "", str(text).lower())


def evaluate(check: dict, state: PostureState | None) -> CheckResult:
    """Judge one declared posture check (network-file shape) against ``state``."""
    name, kind = check["name"], str(check.get("typeId") or "?")
    if state is None:
        return CheckResult(name, kind, None, "no posture data given to the analysis", _hint(check))
    if name in state.failing:
        return CheckResult(name, kind, False, "declared failing", _hint(check))
    if name in state.passing:
        return CheckResult(name, kind, True, "declared passing")
    judge = _JUDGES.get(kind)
    if judge is None:
        return CheckResult(name, kind, None, f"{kind} checks need the device's own answer", _hint(check))
    passing, reason = judge(check, state)
    return CheckResult(name, kind, passing, reason, "" if passing else _hint(check))


def _domain(check: dict, state: PostureState) -> tuple[bool, str]:
    wanted = [d for d in check.get("domains") or []]
    if not state.domain:
        return False, f"no domain reported (needs one of {wanted})"
    ok = state.domain.lower() in {d.lower() for d in wanted}
    return ok, f"reported domain {state.domain!r}" + ("" if ok else f", needs one of {wanted}")


def _os(check: dict, state: PostureState) -> tuple[bool, str]:
    wanted = [_os_text(entry) for entry in check.get("operatingSystems") or []]
    if not state.os_type:
        return False, f"no operating system reported (needs {' or '.join(wanted) or 'none'})"
    for entry in check.get("operatingSystems") or []:
        if str(entry.get("type", "")).lower() != state.os_type.lower():
            continue
        versions = entry.get("versions") or []
        if not versions or any(satisfies(state.os_version or "", v) for v in versions):
            return True, f"reported {state.os_type} {state.os_version or ''}".rstrip()
    return False, f"reported {state.os_type} {state.os_version or ''}, needs {' or '.join(wanted)}"


def _mac(check: dict, state: PostureState) -> tuple[bool, str]:
    wanted = {normalize_mac(m) for m in check.get("macAddresses") or []}
    if not state.mac:
        return False, "no MAC addresses reported"
    ok = bool(state.mac & wanted)
    return ok, "a reported MAC address is allowed" if ok else "none of the reported MAC addresses is allowed"


def _mfa(check: dict, state: PostureState) -> tuple[bool, str]:
    return state.mfa, "an API session passed MFA" if state.mfa else "no API session has passed MFA"


_JUDGES = {"DOMAIN": _domain, "OS": _os, "MAC": _mac, "MFA": _mfa}


def _os_text(entry: dict) -> str:
    versions = entry.get("versions") or []
    return f"{entry.get('type')} {' or '.join(versions)}".strip() if versions else str(entry.get("type"))


def _hint(check: dict) -> str:
    kind = check.get("typeId")
    if kind == "DOMAIN":
        return f"report domain {(check.get('domains') or ['?'])[0]}"
    if kind == "OS":
        entries = check.get("operatingSystems") or []
        return f"run {_os_text(entries[0])}" if entries else "report an allowed operating system"
    if kind == "MAC":
        return f"report MAC address {(check.get('macAddresses') or ['?'])[0]}"
    if kind == "MFA":
        return "complete MFA (enroll TOTP and answer /authenticate/mfa)"
    return "run the required process"


# -- version ranges: ">=10.0.0 <11 || 13.x" ---------------------------------------------
def _version(text: str) -> tuple[int, int, int] | None:
    match = _VERSION.match(text.strip())
    return None if match is None else tuple(int(part or 0) for part in match.groups())  # type: ignore[return-value]


def _comparisons(token: str) -> list[tuple[str, tuple[int, int, int]]]:
    match = _TOKEN.match(token)
    if match is None:
        raise ValueError(token)
    op, text = match.group(1) or "=", match.group(2)
    parts = text.split(".")
    if any(p in ("x", "X", "*") for p in parts):
        numbers = [int(p) for p in parts if p.isdigit()]
        if len(numbers) >= 2:
            return [(">=", (numbers[0], numbers[1], 0)), ("<", (numbers[0], numbers[1] + 1, 0))]
        return [(">=", (numbers[0], 0, 0)), ("<", (numbers[0] + 1, 0, 0))]
    version = _version(text)
    if version is None:
        raise ValueError(token)
    return [("=" if op == "==" else op, version)]


def satisfies(version: str, range_text: str) -> bool:
    """Whether ``version`` is in a semver-style range (``||`` between alternatives)."""
    parsed = _version(version) if version else None
    if parsed is None:
        return False
    tests = {
        "=": parsed.__eq__,
        "!=": parsed.__ne__,
        ">": parsed.__gt__,
        ">=": parsed.__ge__,
        "<": parsed.__lt__,
        "<=": parsed.__le__,
    }
    for alternative in range_text.split("||"):
        tokens = re.sub(r"(>=|<=|!=|==|>|<|=)\s+", r"\1", alternative.strip()).split()
        try:
            checks = [c for token in tokens for c in _comparisons(token)]
        except ValueError:
            continue
        if checks and all(tests[op](bound) for op, bound in checks):
            return True
    return False


__all__ = ["CheckResult", "PostureState", "evaluate", "satisfies"]
