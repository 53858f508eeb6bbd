"""Service, edge router and service edge router policies: one shape, their role lists differ."""

from __future__ import annotations

from controller.api.schemas import Bodies
from controller.model import schema as s

#: any string: the domain words a wrong semantic like the real controller
SEMANTIC = {"type": "string"}


def policy_bodies(lists: tuple[str, ...], extra: dict | None = None, required: tuple[str, ...] = ()) -> Bodies:
    props = {
        "name": s.string(),
        "semantic": SEMANTIC,
        "tags": s.TAGS,
        **{name: s.ROLES for name in lists},
        **(extra or {}),
    }
    create = s.obj(props, required=("name", "semantic", *required))
    return Bodies(create, create, s.patch_of(create))


SERVICE_POLICY = policy_bodies(
    ("identityRoles", "serviceRoles", "postureCheckRoles"), {"type": s.enum("Dial", "Bind")}, ("type",)
)
EDGE_ROUTER_POLICY = policy_bodies(("edgeRouterRoles", "identityRoles"))
SERVICE_EDGE_ROUTER_POLICY = policy_bodies(("edgeRouterRoles", "serviceRoles"))
