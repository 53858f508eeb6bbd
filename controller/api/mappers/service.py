"""A service as one identity sees it: permissions, selected configs, posture queries."""

from __future__ import annotations

from controller.api.mappers.entity import base_view, render
from controller.model.service_access import ServiceSight

INVALID = "Invalid"
DUMMY_POLICY = "dummy {} policy: no posture checks defined"


def plain_service_view(record: dict, *, services) -> dict:
    """The management view without a viewer: no permissions, no posture queries."""
    out = render(services, record)
    out.update({"config": {}, "permissions": [], "postureQueries": []})
    return out


def service_view(record: dict, sight: ServiceSight, invalid: bool = False, *, plain_service_view) -> dict:
    """A service as ``sight`` (``ServiceAccess.sight``) shows it; ``invalid``: ``["Invalid"]`` without access."""
    out = plain_service_view(record)
    permissions = list(sight.permissions)
    if not permissions and invalid:
        permissions = [INVALID]
    out["permissions"] = permissions
    out["config"] = sight.config
    out["postureQueries"] = posture_queries(sight, permissions) if sight.identity_id else []
    return out


def posture_queries(sight: ServiceSight, permissions: list[str]) -> list[dict]:
    """Per linking service policy: its posture checks' results (a dummy policy per permission when none exist)."""
    if sight.policy_results is None:
        return [
            {"policyId": DUMMY_POLICY.format(p.lower()), "policyType": p, "isPassing": True, "postureQueries": []}
            for p in permissions
        ]
    out = []
    for policy, checks in sight.policy_results:
        queries = [query_view(check, result) for check, result in checks]
        out.append(
            {
                "policyId": policy["id"],
                "policyType": policy["type"],
                "isPassing": all(q["isPassing"] for q in queries),
                "postureQueries": queries,
            }
        )
    return out


def query_view(check: dict, result) -> dict:
    """One posture check's result as a posture query."""
    out = base_view(check, "posture-checks")
    out.update(
        {
            "queryType": check["type_id"],
            "isPassing": result.passing,
            "timeout": result.timeout,
            "timeoutRemaining": result.remaining,
        }
    )
    if result.remaining >= 0 and result.timeout_at:
        out["timeoutAt"] = result.timeout_at
    kind = check["type_id"]
    if kind == "PROCESS":
        process = check.get("process") or {}
        out["process"] = {"osType": process.get("os_type"), "path": process.get("path")}
    elif kind == "PROCESS_MULTI":
        out["processes"] = [{"osType": p.get("os_type"), "path": p.get("path")} for p in check.get("processes") or []]
    elif kind == "MFA":
        out["promptOnWake"] = bool(check.get("prompt_on_wake"))
        out["promptOnUnlock"] = bool(check.get("prompt_on_unlock"))
    return out
