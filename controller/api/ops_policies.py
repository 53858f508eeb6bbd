"""Service policies, edge router policies, service edge router policies and what they match."""

from __future__ import annotations

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
from controller.api.schemas import policies
from controller.model.policies import EdgeRouterPolicyManager, ServiceEdgeRouterPolicyManager, ServicePolicyManager
from controller.policy.kinds import EDGE_ROUTERS, IDENTITIES, POSTURE_CHECKS, SERVICES
from controller.store.query import Listing

#: engine kind -> the mapper of the entities a policy's role list matches
MEMBER_VIEWS = {
    IDENTITIES: identity_view,
    SERVICES: plain_service_view,
    EDGE_ROUTERS: edge_router_view,
    POSTURE_CHECKS: posture_check_view,
}


def members(kind: str):
    """Entities one role list of a policy matches, from the engine."""

    def handler(call: Call, *, policies, target, view) -> Listing:
        policy = policies.get(call.param())
        members = records_of(target, policies.members(policy["id"], kind))
        return listing(target, call.list_args(), view, candidates=members)

    return handler


def member_listings(manager_cls, tag: str) -> list[Operation]:
    """``list<Policy><Targets>`` on ``/<policies>/{id}/<targets>``: one per declared role list."""
    policy = manager_cls.declaration
    return [
        related(
            f"list{policy.singular}{target.plural}",
            f"/{policy.collection}/{{id}}/{target.collection}",
            members(target.kind),
            tag=tag,
            summary=f"List the {target.collection.replace('-', ' ')} a policy matches",
            uses={"policies": policy.key, "target": target.key, "view": MEMBER_VIEWS[target.kind]},
        )
        for target in policy.role_targets
    ]


def operations() -> list[Operation]:
    ops = []
    for manager_cls, tag, view, bodies in (
        (ServicePolicyManager, "Service Policy", service_policy_view, policies.SERVICE_POLICY),
        (EdgeRouterPolicyManager, "Edge Router Policy", edge_router_policy_view, policies.EDGE_ROUTER_POLICY),
        (
            ServiceEdgeRouterPolicyManager,
            "Service Edge Router Policy",
            service_edge_router_policy_view,
            policies.SERVICE_EDGE_ROUTER_POLICY,
        ),
    ):
        ops += crud(manager_cls, tag=tag, view=view, schemas=bodies)
        ops += member_listings(manager_cls, tag)
    return ops
