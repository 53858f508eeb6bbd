"""What an identity reaches through policies: edge routers, services, policies, advice, config overrides."""

from __future__ import annotations

from functools import partial

from controller.api.call import Call
from controller.api.crud import LIST_QUERY, related
from controller.api.mappers.entity import View, listing, ref
from controller.api.mappers.policies import edge_router_policy_view, service_policy_view
from controller.api.mappers.router import edge_router_view
from controller.api.mappers.service import service_view
from controller.api.mappers.service_config import service_config_view
from controller.api.operations import MANAGEMENT, Operation
from controller.api.role_queries import attribute_operation, policy_type_query, records_of
from controller.api.schemas.service_config import PAIRS
from controller.policy.kinds import EDGE_ROUTER_POLICIES, IDENTITIES, SERVICE_POLICIES
from controller.store.query import Listing

TAG = "Identity"


def identity_policies(manager_attr: str, pkind: str, view: View):
    def handler(call: Call) -> Listing:
        ctl = call.ctl
        identity = ctl.identities.get(call.param())
        manager = getattr(ctl, manager_attr)
        ids = ctl.network.engine.policies_of(IDENTITIES, identity["id"], pkind)
        return listing(manager, call.list_args(), partial(view, ctl), candidates=records_of(manager, ids))

    return handler


def identity_edge_routers(call: Call) -> Listing:
    ctl = call.ctl
    identity = ctl.identities.get(call.param())
    ids = ctl.network.engine.edge_routers_for_identity(identity["id"])
    routers = records_of(ctl.edge_routers, ids)
    return listing(ctl.edge_routers, call.list_args(), partial(edge_router_view, ctl), candidates=routers)


def identity_services(call: Call) -> Listing:
    """Services the identity may dial and/or bind (``policyType``), as that identity sees them."""
    ctl = call.ctl
    identity = ctl.identities.get(call.param())
    ids = ctl.network.engine.services_for_identity(identity["id"], policy_type_query(call))
    return listing(
        ctl.services,
        call.list_args(),
        lambda r: service_view(ctl, r, identity["id"], None, []),
        candidates=records_of(ctl.services, ids),
    )


def policy_advice(call: Call) -> dict:
    ctl = call.ctl
    identity = ctl.identities.get(call.param())
    service = ctl.services.get(call.param("serviceId"))
    advice = ctl.network.engine.advice(identity["id"], service["id"])
    common = []
    for router in records_of(ctl.edge_routers, advice.pop("commonRouterIds")):
        common.append({**ref(ctl.edge_routers, router["id"]), "isOnline": ctl.router_presence.is_online(router["id"])})
    return {
        "identityId": identity["id"],
        "identity": ref(ctl.identities, identity["id"]),
        "serviceId": service["id"],
        "service": ref(ctl.services, service["id"]),
        **advice,
        "commonRouters": common,
    }


def list_service_configs(call: Call) -> Listing:
    ctl = call.ctl
    identity = ctl.identities.get(call.param())
    items = [service_config_view(ctl, r) for r in ctl.service_configs.of_identity(identity["id"])]
    return Listing(items, {"limit": len(items), "offset": 0, "totalCount": len(items)})


def associate_service_configs(call: Call) -> None:
    call.ctl.service_configs.associate(call.param(), call.body, context=call.change)


def disassociate_service_configs(call: Call) -> None:
    call.ctl.service_configs.disassociate(call.param(), call.body, context=call.change)


def operations() -> list[Operation]:
    return [
        related(
            "listIdentitysEdgeRouterPolicies",
            "/identities/{id}/edge-router-policies",
            identity_policies("edge_router_policies", EDGE_ROUTER_POLICIES, edge_router_policy_view),
            tag=TAG,
            summary="List the edge router policies matching an identity",
        ),
        related(
            "listIdentityEdgeRouters",
            "/identities/{id}/edge-routers",
            identity_edge_routers,
            tag=TAG,
            summary="List the edge routers an identity may use (edge router policies)",
        ),
        related(
            "listIdentityServicePolicies",
            "/identities/{id}/service-policies",
            identity_policies("service_policies", SERVICE_POLICIES, service_policy_view),
            tag=TAG,
            summary="List the service policies matching an identity",
        ),
        related(
            "listIdentityServices",
            "/identities/{id}/services",
            identity_services,
            tag=TAG,
            summary="List the services an identity may dial or bind",
            query={**LIST_QUERY, "policyType": {"type": "string", "enum": ["dial", "bind"]}},
        ),
        Operation(
            "getIdentityPolicyAdvice",
            "GET",
            "/identities/{id}/policy-advice/{serviceId}",
            policy_advice,
            apis=(MANAGEMENT,),
            tag=TAG,
            summary="Whether and over which routers an identity may use a service",
        ),
        related(
            "listIdentitysServiceConfigs",
            "/identities/{id}/service-configs",
            list_service_configs,
            tag=TAG,
            summary="List an identity's service config overrides",
        ),
        Operation(
            "associateIdentitysServiceConfigs",
            "POST",
            "/identities/{id}/service-configs",
            associate_service_configs,
            apis=(MANAGEMENT,),
            body=PAIRS,
            reply="empty",
            tag=TAG,
            summary="Override configs of services for an identity",
        ),
        Operation(
            "disassociateIdentitysServiceConfigs",
            "DELETE",
            "/identities/{id}/service-configs",
            disassociate_service_configs,
            apis=(MANAGEMENT,),
            body=PAIRS,
            reply="empty",
            tag=TAG,
            summary="Remove service config overrides of an identity",
        ),
        attribute_operation(IDENTITIES, "Identity"),
    ]
