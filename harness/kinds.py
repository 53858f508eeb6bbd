"""What networks-as-code knows about each kind of entity.

Each :class:`Kind` names its YAML key, its API operations, the fields a network
file may declare, the defaults a create needs, references by name to other
kinds, and role lists whose ``@name`` entries become ``@id`` on apply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class Ref:
    """A field naming another entity: ``authPolicy: strict`` -> ``authPolicyId: <id>``."""

    kind: str
    wire: str
    many: bool = False


@dataclass(frozen=True)
class Kind:
    key: str
    singular: str
    plural: str
    fields: tuple[str, ...]
    defaults: dict = field(default_factory=dict)
    refs: dict[str, Ref] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    #: fields sent only on create (never compared or patched)
    create_only: tuple[str, ...] = ()
    #: records the controller owns: neither exported nor pruned
    system: Callable[[dict], bool] = lambda record: bool(record.get("isSystem"))
    #: field -> test(desired value, current record) for fields stored differently than sent
    equivalent: dict[str, Callable] = field(default_factory=dict)
    #: values that mean "not set": left out of exports and ignored by diff
    quiet: dict = field(default_factory=dict)
    #: declared but never read back (secrets, create-time requests): ignored by diff
    write_only: tuple[str, ...] = ()

    @property
    def list_op(self) -> str:
        return f"list{self.plural}"

    @property
    def create_op(self) -> str:
        return f"create{self.singular}"

    @property
    def patch_op(self) -> str:
        return f"patch{self.singular}"

    @property
    def delete_op(self) -> str:
        return f"delete{self.singular}"


POLICY_SYSTEM = lambda r: bool(r.get("isSystem"))  # noqa: E731
BUILT_IN_CONFIG_TYPES = {
    "ziti-tunneler-client.v1",
    "ziti-tunneler-server.v1",
    "intercept.v1",
    "host.v1",
    "host.v2",
    "interfaces.v1",
    "proxy.v1",
    "router.link.v1",
}

KINDS: list[Kind] = [
    Kind(
        "configTypes",
        "ConfigType",
        "ConfigTypes",
        ("schema", "target"),
        system=lambda r: r.get("name") in BUILT_IN_CONFIG_TYPES,
    ),
    Kind(
        "configs",
        "Config",
        "Configs",
        ("data",),
        refs={"configType": Ref("configTypes", "configTypeId")},
        defaults={"data": {}},
    ),
    Kind(
        "authPolicies",
        "AuthPolicy",
        "AuthPolicies",
        ("primary", "secondary"),
        system=lambda r: r.get("id") == "default",
    ),
    Kind(
        "externalJwtSigners",
        "ExternalJwtSigner",
        "ExternalJwtSigners",
        (
            "certPem",
            "jwksEndpoint",
            "kid",
            "issuer",
            "audience",
            "claimsProperty",
            "useExternalId",
            "targetToken",
            "enabled",
            "clientId",
            "scopes",
            "externalAuthUrl",
        ),
        defaults={"enabled": True},
    ),
    Kind(
        "cas",
        "Ca",
        "Cas",
        (
            "certPem",
            "isAuthEnabled",
            "isAutoCaEnrollmentEnabled",
            "isOttCaEnrollmentEnabled",
            "identityRoles",
            "identityNameFormat",
            "externalIdClaim",
        ),
        defaults={
            "isAuthEnabled": True,
            "isAutoCaEnrollmentEnabled": False,
            "isOttCaEnrollmentEnabled": False,
            "identityRoles": [],
        },
    ),
    Kind(
        "postureChecks",
        "PostureCheck",
        "PostureChecks",
        (
            "typeId",
            "roleAttributes",
            "domains",
            "operatingSystems",
            "process",
            "processes",
            "macAddresses",
            "semantic",
            "timeoutSeconds",
            "promptOnWake",
            "promptOnUnlock",
            "ignoreLegacyEndpoints",
        ),
    ),
    Kind(
        "services",
        "Service",
        "Services",
        ("roleAttributes", "terminatorStrategy", "maxIdleTimeMillis"),
        defaults={"encryptionRequired": True},
        refs={"configs": Ref("configs", "configs", many=True)},
        create_only=("encryptionRequired",),
        quiet={"encryptionRequired": (True,), "terminatorStrategy": ("smartrouting",), "maxIdleTimeMillis": (0,)},
    ),
    Kind(
        "edgeRouters",
        "EdgeRouter",
        "EdgeRouters",
        ("roleAttributes", "isTunnelerEnabled", "cost", "noTraversal", "disabled", "appData"),
        quiet={"isTunnelerEnabled": (False,), "cost": (0,), "noTraversal": (False,), "disabled": (False,)},
    ),
    Kind(
        "routers",
        "TransitRouter",
        "TransitRouters",
        ("cost", "noTraversal", "disabled"),
        quiet={"cost": (0,), "noTraversal": (False,), "disabled": (False,)},
    ),
    Kind(
        "identities",
        "Identity",
        "Identities",
        (
            "type",
            "isAdmin",
            "roleAttributes",
            "externalId",
            "appData",
            "defaultHostingCost",
            "defaultHostingPrecedence",
            "serviceHostingCosts",
            "serviceHostingPrecedences",
        ),
        defaults={"type": "User", "isAdmin": False},
        refs={"authPolicy": Ref("authPolicies", "authPolicyId")},
        create_only=("enrollment",),
        system=lambda r: bool(r.get("isDefaultAdmin")) or r.get("typeId") == "Router",
        # NOTE: the controller stores User, Device and Service as Default.
        equivalent={"type": lambda want, have: (want if want == "Router" else "Default") == have.get("typeId")},
        quiet={
            "type": ("User", "Device", "Service", "Default"),
            "isAdmin": (False,),
            "defaultHostingCost": (0,),
            "defaultHostingPrecedence": ("default",),
        },
        write_only=("password", "username", "enrollment"),
    ),
    Kind(
        "servicePolicies",
        "ServicePolicy",
        "ServicePolicies",
        ("type", "semantic"),
        defaults={"semantic": "AnyOf", "type": "Dial"},
        quiet={"semantic": ("AnyOf",)},
        roles={"identityRoles": "identities", "serviceRoles": "services", "postureCheckRoles": "postureChecks"},
    ),
    Kind(
        "edgeRouterPolicies",
        "EdgeRouterPolicy",
        "EdgeRouterPolicies",
        ("semantic",),
        defaults={"semantic": "AnyOf"},
        quiet={"semantic": ("AnyOf",)},
        roles={"identityRoles": "identities", "edgeRouterRoles": "edgeRouters"},
        system=POLICY_SYSTEM,
    ),
    Kind(
        "serviceEdgeRouterPolicies",
        "ServiceEdgeRouterPolicy",
        "ServiceEdgeRouterPolicies",
        ("semantic",),
        defaults={"semantic": "AnyOf"},
        quiet={"semantic": ("AnyOf",)},
        roles={"serviceRoles": "services", "edgeRouterRoles": "edgeRouters"},
    ),
]
BY_KEY = {kind.key: kind for kind in KINDS}


def canonical(kind: Kind, item: dict) -> dict:
    """An entity as diff compares it: no empty, default-valued or write-only fields."""
    out = {}
    for key, value in item.items():
        if key in kind.write_only or value in (None, [], {}, ""):
            continue
        if value in kind.quiet.get(key, ()):
            continue
        out[key] = sorted(value) if isinstance(value, list) and all(isinstance(v, str) for v in value) else value
    return out
