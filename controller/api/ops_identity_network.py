"""What an identity reaches through policies: edge routers, services, policies, advice, config overrides."""

from __future__ import annotations

from controller.api.call import Call
from controller.api.crud import LIST_QUERY, related
from controller.api.mappers.entity import listing, ref
from controller.api.operations import MANAGEMENT, Operation
from controller.api.relations import relation
from controller.api.role_queries import attribute_operation, policy_type_query, records_of
from controller.api.schemas.service_config import PAIRS
from controller.policy.kinds import IDENTITIES
from controller.store.query import Listing

TAG = "Identity"


def identity_services(call: Call, *, service_view, identities, engine, services, service_access) -> Listing:
    """Services the identity may dial and/or bind (``policyType``), as that identity sees them."""
    identity = identities.get(call.param())
    ids = engine.services_for_identity(identity["id"], policy_type_query(call))
    return listing(
        services,
        call.list_args(),
        lambda r: service_view(r, service_access.sight(r, identity["id"], None, [])),
        candidates=records_of(services, ids),
    )


def policy_advice(call: Call, *, identities, services, engine, edge_routers, router_presence) -> dict:
    identity = identities.get(call.param())
    service = services.get(call.param("serviceId"))
    advice = engine.advice(identity["id"], service["id"])
    common = []
    for router in records_of(edge_routers, advice.pop("commonRouterIds")):
        common.append({**ref(edge_routers, router["id"]), "isOnline": router_presence.is_online(router["id"])})
    return {
        "identityId": identity["id"],
        "identity": ref(identities, identity["id"]),
        "serviceId": service["id"],
        "service": ref(services, service["id"]),
        **advice,
        "commonRouters": common,
    }


def list_service_configs(call: Call, *, service_config_view, identities, service_configs) -> Listing:
    identity = identities.get(call.param())
    items = [service_config_view(r) for r in service_configs.of_identity(identity["id"])]
    return Listing(items, {"limit": len(items), "offset": 0, "totalCount": len(items)})


def associate_service_configs(call: Call, *, service_configs) -> None:
    service_configs.associate(call.param(), call.body, context=call.change)


def disassociate_service_configs(call: Call, *, service_configs) -> None:
    service_configs.disassociate(call.param(), call.body, context=call.change)


def operations() -> list[Operation]:
    return [
        relation("listIdentitysEdgeRouterPolicies", tag=TAG),
        relation("listIdentityEdgeRouters", tag=TAG),
        relation("listIdentityServicePolicies", tag=TAG),
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
