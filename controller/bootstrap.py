"""First-start records, as the real controller creates them."""

from __future__ import annotations

import logging

from controller.model.builtin import bootstrap_builtins

log = logging.getLogger("controller")


def bootstrap(ctl) -> None:
    """Create what a fresh database needs; idempotent on every start."""
    ctl.identity_types.bootstrap()
    ctl.auth_policies.bootstrap()
    bootstrap_builtins(ctl)
    ctl.controller_settings.bootstrap()
    ensure_default_admin(ctl)


def ensure_default_admin(ctl) -> None:
    """The default admin: isAdmin, isDefaultAdmin, with a updb authenticator."""
    with ctl.store.lock:
        if any(r.get("is_default_admin") for r in ctl.store.values("identities")):
            return
        config = ctl.config
        if not config.admin_password:
            log.warning("no default admin exists and no admin password was given: none created")
            return
        with ctl.store.transaction():
            identity_id = ctl.identities.create_system(
                {"name": config.admin_name, "is_admin": True, "is_default_admin": True, "type_id": "Default"}
            )
            ctl.authenticators.create_updb(identity_id, config.admin_username, config.admin_password)


QUICKSTART_POLICIES = (
    (
        "edge_router_policies",
        {
            "name": "all-endpoints-public-routers",
            "semantic": "AnyOf",
            "edgeRouterRoles": ["#public"],
            "identityRoles": ["#all"],
        },
    ),
    (
        "service_edge_router_policies",
        {
            "name": "all-routers-all-services",
            "semantic": "AnyOf",
            "edgeRouterRoles": ["#all"],
            "serviceRoles": ["#all"],
        },
    ),
)


def ensure_quickstart_policies(ctl) -> list[str]:
    """The two policies ``ziti edge quickstart`` creates, unless present; return the names created."""
    created = []
    for attr, body in QUICKSTART_POLICIES:
        manager = getattr(ctl, attr)
        if manager.find_by_name(body["name"]) is None:
            manager.create(dict(body))
            created.append(body["name"])
    return created
