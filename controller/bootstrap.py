"""First-start records, as the real controller creates them."""

from __future__ import annotations

import logging

from controller.clock import rfc3339
from controller.model.builtin import bootstrap_builtins

log = logging.getLogger("controller")


def bootstrap(
    *, store, clock, config, identity_types, auth_policies, controller_settings, identities, authenticators
) -> None:
    """Create what a fresh database needs; idempotent on every start."""
    identity_types.bootstrap()
    auth_policies.bootstrap()
    bootstrap_builtins(store, rfc3339(clock.now()))
    controller_settings.bootstrap()
    ensure_default_admin(store, identities, authenticators, config)


def ensure_default_admin(store, identities, authenticators, config) -> None:
    """The default admin: isAdmin, isDefaultAdmin, with a updb authenticator."""
    with store.lock:
        if any(r.get("is_default_admin") for r in store.values("identities")):
            return
        if not config.admin_password:
            log.warning("no default admin exists and no admin password was given: none created")
            return
        with store.transaction():
            identity_id = identities.create_system(
                {"name": config.admin_name, "is_admin": True, "is_default_admin": True, "type_id": "Default"}
            )
            authenticators.create_updb(identity_id, config.admin_username, config.admin_password)


#: the edge router policy, then the service edge router policy
QUICKSTART_POLICIES = (
    {
        "name": "all-endpoints-public-routers",
        "semantic": "AnyOf",
        "edgeRouterRoles": ["#public"],
        "identityRoles": ["#all"],
    },
    {"name": "all-routers-all-services", "semantic": "AnyOf", "edgeRouterRoles": ["#all"], "serviceRoles": ["#all"]},
)


def ensure_quickstart_policies(edge_router_policies, service_edge_router_policies) -> list[str]:
    """The two policies ``ziti edge quickstart`` creates, unless present; return the names created."""
    created = []
    for manager, body in zip((edge_router_policies, service_edge_router_policies), QUICKSTART_POLICIES):
        if manager.find_by_name(body["name"]) is None:
            manager.create(dict(body))
            created.append(body["name"])
    return created
