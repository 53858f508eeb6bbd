"""Builds the route table of every operation and the Falcon router that serves it."""

from __future__ import annotations

import functools
from collections import defaultdict

from falcon.routing import CompiledRouter

from controller.api import (
    ops_auth,
    ops_cas,
    ops_certs,
    ops_cluster,
    ops_configs,
    ops_enroll,
    ops_fabric,
    ops_identities,
    ops_identity_network,
    ops_import,
    ops_jwt_signers,
    ops_mfa,
    ops_operations,
    ops_policies,
    ops_posture,
    ops_revocations,
    ops_routers,
    ops_services,
    ops_sessions,
    ops_settings,
    ops_system,
)
from controller.api.dispatch import PathResource
from controller.api.operations import PREFIXES, RouteTable
from controller.api.ops_oidc import oidc_routes
from controller.api.ops_system import swagger_routes

#: modules contributing operations, in documentation order
OPERATION_MODULES = [
    ops_system,
    ops_auth,
    ops_identities,
    ops_enroll,
    ops_cas,
    ops_certs,
    ops_mfa,
    ops_jwt_signers,
    ops_settings,
    ops_operations,
    ops_identity_network,
    ops_configs,
    ops_services,
    ops_routers,
    ops_policies,
    ops_posture,
    ops_sessions,
    ops_revocations,
    ops_import,
    ops_fabric,
    ops_cluster,
]


def build_route_table(extra_modules=()) -> RouteTable:
    table = RouteTable()
    for module in [*OPERATION_MODULES, *extra_modules]:
        table.extend(module.operations())
    return table


@functools.lru_cache(maxsize=8)
def shared_routing(extra_modules: tuple = ()) -> tuple[RouteTable, CompiledRouter]:
    """The route table and a router of its resources, built and compiled once per process.

    Every app of the process can share them (pass the router to ``falcon.App``): a
    resource finds its controller on the request, so a new app (one per test) costs
    no mounting. The route table is never changed after it is built.
    """
    table = build_route_table(extra_modules)
    router = CompiledRouter()
    for template, resource in [*_resources(table), *oidc_routes(), *swagger_routes()]:
        router.add_route(template, resource)
    return table, router


def _resources(table: RouteTable):
    """One Falcon resource per (API, path), serving the methods declared for it."""
    grouped: dict[tuple[str, str], list] = defaultdict(list)
    for op in table:
        for api in op.apis:
            grouped[(api, op.path)].append(op)
    for (api, path), ops in grouped.items():
        yield PREFIXES[api] + ("" if path == "/" else path), PathResource(api, ops)
