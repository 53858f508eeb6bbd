"""Engine-backed relations: the entities the policy engine relates to one record, served by one handler.

``/identities/{id}/service-policies``, ``/services/{id}/edge-routers``,
``/edge-routers/{id}/identities`` and their kin share one shape: find the owner
(404 when missing), ask the engine for the related ids, list those records.
``controller/entities.py`` declares each (``RELATIONS``); ``relation(op_id)``
makes its operation, bound to the owner's and target's managers by name.
"""

from __future__ import annotations

from controller.api.crud import LIST_QUERY, related
from controller.api.mappers.entity import listing
from controller.api.mappers.identity import identity_view
from controller.api.mappers.policies import (
    edge_router_policy_view,
    service_edge_router_policy_view,
    service_policy_view,
)
from controller.api.mappers.router import edge_router_view
from controller.api.mappers.service import plain_service_view
from controller.api.operations import Operation
from controller.api.role_queries import policy_type_query, records_of
from controller.entities import RELATIONS, Relation

#: entity key -> the mapper of its records in a relation listing
VIEWS = {
    "identities": identity_view,
    "services": plain_service_view,
    "edge_routers": edge_router_view,
    "service_policies": service_policy_view,
    "edge_router_policies": edge_router_policy_view,
    "service_edge_router_policies": service_edge_router_policy_view,
}
POLICY_TYPE_QUERY = {**LIST_QUERY, "policyType": {"type": "string", "enum": ["dial", "bind"]}}


def list_related(relation: Relation):
    """The one handler of every relation (``relation`` says which engine query)."""

    def handler(call, *, owner, engine, target, view):
        record = owner.get(call.param())
        policy_type = policy_type_query(call) if relation.policy_type else None
        ids = relation.query(engine, record["id"], policy_type)
        return listing(target, call.list_args(), view, candidates=records_of(target, ids))

    return handler


def relation(op_id: str, *, tag: str) -> Operation:
    """The list operation of the relation ``controller/entities.py`` declares as ``op_id``."""
    declared = RELATIONS[op_id]
    return related(
        op_id,
        declared.path,
        list_related(declared),
        tag=tag,
        summary=declared.summary,
        query=POLICY_TYPE_QUERY if declared.policy_type else None,
        uses={"owner": declared.owner, "engine": "engine", "target": declared.target, "view": VIEWS[declared.target]},
    )
