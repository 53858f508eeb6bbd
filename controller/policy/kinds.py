"""Names shared by the policy engine's modules (wire spellings)."""

from __future__ import annotations

IDENTITIES = "identities"
SERVICES = "services"
EDGE_ROUTERS = "edgeRouters"
POSTURE_CHECKS = "postureChecks"
KINDS = (IDENTITIES, SERVICES, EDGE_ROUTERS, POSTURE_CHECKS)

SERVICE_POLICIES = "servicePolicies"
EDGE_ROUTER_POLICIES = "edgeRouterPolicies"
SERVICE_EDGE_ROUTER_POLICIES = "serviceEdgeRouterPolicies"
# Role lists of each policy kind, in the order they are applied (A side before B side).
POLICY_KINDS = {
    SERVICE_POLICIES: (IDENTITIES, SERVICES, POSTURE_CHECKS),
    EDGE_ROUTER_POLICIES: (IDENTITIES, EDGE_ROUTERS),
    SERVICE_EDGE_ROUTER_POLICIES: (SERVICES, EDGE_ROUTERS),
}

DIAL = "Dial"
BIND = "Bind"


def policy_type(value: str | None) -> str | None:
    """``Dial``/``Bind`` whatever the case; None stays None."""
    if value is None:
        return None
    return BIND if str(value).lower() == "bind" else DIAL
