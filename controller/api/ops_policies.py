"""Service policies, edge router policies, service edge router policies and what they match."""

from __future__ import annotations

from functools import partial

from controller.api.call import Call
from controller.api.crud import crud, related
from controller.api.mappers.entity import listing
from controller.api.mappers.identity import identity_view
from controller.api.mappers.policies import (
    edge_router_policy_view,
    service_edge_router_policy_view,
    service_policy_view,
)
from controller.api.mappers.posture_check import posture_check_view
from controller.api.mappers.router import edge_router_view
from controller.api.mappers.service import plain_service_view
from controller.api.operations import Operation
from controller.api.role_queries import records_of
from controller.model.policies import EdgeRouterPolicyManager, ServiceEdgeRouterPolicyManager, ServicePolicyManager
from controller.policy.kinds import EDGE_ROUTERS, IDENTITIES, POSTURE_CHECKS, SERVICES
from controller.store.query import Listing

#: engine kind -> attribute of the manager that lists those entities, and their mapper
MEMBER_MANAGERS = {
    IDENTITIES: ("identities", identity_view),
    SERVICES: ("services", plain_service_view),
    EDGE_ROUTERS: ("edge_routers", edge_router_view),
    POSTURE_CHECKS: ("posture_checks", posture_check_view),
}


def members(policy_attr: str, kind: str):
    """Entities one role list of a policy matches, from the engine."""

    def handler(call: Call) -> Listing:
        ctl = call.ctl
        policies = getattr(ctl, policy_attr)
        policy = policies.get(call.param())
        attr, view = MEMBER_MANAGERS[kind]
        target = getattr(ctl, attr)
        members = records_of(target, policies.members(policy["id"], kind))
        return listing(target, call.list_args(), partial(view, ctl), candidates=members)

    return handler


def _listing(op_id: str, collection: str, sub: str, policy_attr: str, kind: str, tag: str) -> Operation:
    return related(
        op_id,
        f"/{collection}/{{id}}/{sub}",
        members(policy_attr, kind),
        tag=tag,
        summary=f"List the {sub.replace('-', ' ')} a policy matches",
    )


def operations() -> list[Operation]:
    sp, erp, serp = "Service Policy", "Edge Router Policy", "Service Edge Router Policy"
    ops = crud(
        ServicePolicyManager, "service_policies", "ServicePolicy", "ServicePolicies", tag=sp, view=service_policy_view
    )
    ops += [
        _listing("listServicePolicyIdentities", "service-policies", "identities", "service_policies", IDENTITIES, sp),
        _listing(
            "listServicePolicyPostureChecks",
            "service-policies",
            "posture-checks",
            "service_policies",
            POSTURE_CHECKS,
            sp,
        ),
        _listing("listServicePolicyServices", "service-policies", "services", "service_policies", SERVICES, sp),
    ]
    ops += crud(
        EdgeRouterPolicyManager,
        "edge_router_policies",
        "EdgeRouterPolicy",
        "EdgeRouterPolicies",
        tag=erp,
        view=edge_router_policy_view,
    )
    ops += [
        _listing(
            "listEdgeRouterPolicyEdgeRouters",
            "edge-router-policies",
            "edge-routers",
            "edge_router_policies",
            EDGE_ROUTERS,
            erp,
        ),
        _listing(
            "listEdgeRouterPolicyIdentities",
            "edge-router-policies",
            "identities",
            "edge_router_policies",
            IDENTITIES,
            erp,
        ),
    ]
    ops += crud(
        ServiceEdgeRouterPolicyManager,
        "service_edge_router_policies",
        "ServiceEdgeRouterPolicy",
        "ServiceEdgeRouterPolicies",
        tag=serp,
        view=service_edge_router_policy_view,
    )
    ops += [
        _listing(
            "listServiceEdgeRouterPolicyEdgeRouters",
            "service-edge-router-policies",
            "edge-routers",
            "service_edge_router_policies",
            EDGE_ROUTERS,
            serp,
        ),
        _listing(
            "listServiceEdgeRouterPolicyServices",
            "service-edge-router-policies",
            "services",
            "service_edge_router_policies",
            SERVICES,
            serp,
        ),
    ]
    return ops
