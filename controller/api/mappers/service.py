"""A service as one identity sees it: permissions, selected configs, posture queries."""

from __future__ import annotations

from controller.api.mappers.entity import base_view, render

INVALID = "Invalid"
DUMMY_POLICY = "dummy {} policy: no posture checks defined"


def plain_service_view(ctl, record: dict) -> dict:
    """The management view without a viewer: no permissions, no posture queries."""
    out = render(ctl.services, record)
    out.update({"config": {}, "permissions": [], "postureQueries": []})
    return out


def service_view(
    ctl, service: dict, identity_id: str | None, session: dict | None, type_ids: list[str], invalid: bool = False
) -> dict:
    """A service as ``identity_id`` sees it (``invalid``: ``["Invalid"]`` when it has no access)."""
    access = ctl.service_access
    out = plain_service_view(ctl, service)
    permissions = access.permissions(identity_id, service["id"]) if identity_id else []
    if not permissions and invalid:
        permissions = [INVALID]
    out["permissions"] = permissions
    out["config"] = access.config_map(service, identity_id, type_ids)
    out["postureQueries"] = (
        posture_queries(ctl, identity_id, session, service["id"], permissions) if identity_id else []
    )
    return out


def posture_queries(ctl, identity_id: str, session: dict | None, service_id: str, permissions: list[str]) -> list[dict]:
    """Per linking service policy: its posture checks' results (a dummy policy per permission when none exist)."""
    access = ctl.service_access
    if not access.posture_checks_exist():
        return [
            {"policyId": DUMMY_POLICY.format(p.lower()), "policyType": p, "isPassing": True, "postureQueries": []}
            for p in permissions
        ]
    out = []
    for policy, checks in access.policy_results(identity_id, session, service_id):
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
