"""An identity's reported posture data (``GET /identities/{id}/posture-data``)."""

from __future__ import annotations


def _base(entry: dict | None) -> dict:
    entry = entry or {}
    return {
        "lastUpdatedAt": entry.get("last_updated_at"),
        "postureCheckId": entry.get("posture_check_id", ""),
        "timedOut": bool(entry.get("timed_out")),
    }


def posture_data_view(identity_id: str, *, api_session_posture_view, posture) -> dict:
    posture = posture
    data = posture.of_identity(identity_id)
    os_entry, domain, mac = data.get("os") or {}, data.get("domain") or {}, data.get("mac") or {}
    processes = [
        {
            **_base(p),
            "path": p["path"],
            "isRunning": p["is_running"],
            "binaryHash": p["hash"],
            "signerFingerprints": p["signer_fingerprints"],
        }
        for per_check in (data.get("processes") or {}).values()
        for p in per_check.values()
    ]
    sessions = {sid: api_session_posture_view(sid, state) for sid, state in posture.session_states(identity_id).items()}
    return {
        "os": {
            **_base(os_entry),
            "type": os_entry.get("type", ""),
            "version": os_entry.get("version", ""),
            "build": os_entry.get("build", ""),
        },
        "domain": {**_base(domain), "domain": domain.get("domain", "")},
        "mac": {**_base(mac), "addresses": mac.get("addresses", [])},
        "processes": processes,
        "apiSessionPostureData": sessions,
    }


def api_session_posture_view(session_id: str, state: dict, *, api_sessions, identities) -> dict:
    session = api_sessions.find(session_id) or {}
    return {
        "endpointState": {"wokenAt": state.get("woken_at"), "unlockedAt": state.get("unlocked_at")},
        "mfa": {
            "apiSessionId": session_id,
            "passedMfa": bool(session.get("is_mfa_complete")),
            "passedAt": state.get("mfa_passed_at") or session.get("mfa_completed_at"),
            "passedOnWake": False,
            "passedOnUnlock": False,
        },
        "sdkInfo": (identities.find(state.get("identity_id")) or {}).get("sdk_info") or {},
    }
