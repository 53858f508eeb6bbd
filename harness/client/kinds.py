"""What networks-as-code knows about each kind of entity.

Each :class:`Kind` takes its YAML key, API operations, references by name to
other kinds and role lists (whose ``@name`` entries become ``@id`` on apply) from
the entity's declaration, and adds the fields a network file may declare and the
defaults a create needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from controller.entities import ENTITIES, IDENTITY_STORED_TYPE, Entity


@dataclass(frozen=True)
class Ref:
    """A field naming another entity: ``authPolicy: strict`` -> ``authPolicyId: <id>``."""

    kind: str
    wire: str
    many: bool = False


@dataclass(frozen=True)
class Kind:
    """A declared entity (``controller/entities.py``) as networks-as-code handles it.

    Names, references and role lists come from the declaration; the rest are the
    fields a network file may declare and the quirks of reading them back.
    """

    entity: Entity
    fields: tuple[str, ...]
    #: the YAML key (the entity's camelCase plural unless given)
    key: str = ""
    defaults: dict = field(default_factory=dict)
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
    #: ``authPolicy`` -> the reference it names by name (declared refs with a wire name)
    refs: dict[str, Ref] = field(init=False)
    #: role-list wire name -> the kind whose ``@name`` entries it holds
    roles: dict[str, str] = field(init=False)

    def __post_init__(self):
        entity = self.entity
        if not self.key:
            object.__setattr__(self, "key", entity.kind)
        refs = {
            ref.wire if ref.many else ref.wire.removesuffix("Id"): Ref(ENTITIES[ref.target].kind, ref.wire, ref.many)
            for ref in entity.refs
            if ref.wire
        }
        object.__setattr__(self, "refs", refs)
        object.__setattr__(self, "roles", {wire: ENTITIES[key].kind for wire, key in entity.roles.items()})

    @property
    def singular(self) -> str:
        return self.entity.singular

    @property
    def plural(self) -> str:
        return self.entity.plural

    @property
    def list_op(self) -> str:
        return self.entity.op_id("list")

    @property
    def create_op(self) -> str:
        return self.entity.op_id("create")

    @property
    def patch_op(self) -> str:
        return self.entity.op_id("patch")

    @property
    def delete_op(self) -> str:
        return self.entity.op_id("delete")


#: identity types the controller stores as Default (a diff must not see them change)
STORED_AS_DEFAULT = tuple(wire for wire, stored in IDENTITY_STORED_TYPE.items() if stored == "Default")
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
    Kind(ENTITIES["config_types"], ("schema", "target"), system=lambda r: r.get("name") in BUILT_IN_CONFIG_TYPES),
    Kind(ENTITIES["configs"], ("data",), defaults={"data": {}}),
    Kind(ENTITIES["auth_policies"], ("primary", "secondary"), system=lambda r: r.get("id") == "default"),
    Kind(
        ENTITIES["external_jwt_signers"],
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
        ENTITIES["cas"],
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
        ENTITIES["posture_checks"],
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
        ENTITIES["services"],
        ("roleAttributes", "terminatorStrategy", "maxIdleTimeMillis"),
        defaults={"encryptionRequired": True},
        create_only=("encryptionRequired",),
        quiet={"encryptionRequired": (True,), "terminatorStrategy": ("smartrouting",), "maxIdleTimeMillis": (0,)},
    ),
    Kind(
        ENTITIES["edge_routers"],
        ("roleAttributes", "isTunnelerEnabled", "cost", "noTraversal", "disabled", "appData"),
        quiet={"isTunnelerEnabled": (False,), "cost": (0,), "noTraversal": (False,), "disabled": (False,)},
        # the harness's own (``ziti-harness up`` runs the router as a process, linked to these): never sent
        write_only=("process", "links"),
    ),
    Kind(
        ENTITIES["transit_routers"],
        ("cost", "noTraversal", "disabled"),
        key="routers",
        quiet={"cost": (0,), "noTraversal": (False,), "disabled": (False,)},
    ),
    Kind(
        ENTITIES["identities"],
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
        create_only=("enrollment",),
        system=lambda r: bool(r.get("isDefaultAdmin")) or r.get("typeId") == "Router",
        equivalent={"type": lambda want, have: IDENTITY_STORED_TYPE.get(want, "Default") == have.get("typeId")},
        quiet={
            "type": STORED_AS_DEFAULT,
            "isAdmin": (False,),
            "defaultHostingCost": (0,),
            "defaultHostingPrecedence": ("default",),
        },
        write_only=("password", "username", "enrollment"),
    ),
    Kind(
        ENTITIES["service_policies"],
        ("type", "semantic"),
        defaults={"semantic": "AnyOf", "type": "Dial"},
        quiet={"semantic": ("AnyOf",)},
    ),
    Kind(
        ENTITIES["edge_router_policies"],
        ("semantic",),
        defaults={"semantic": "AnyOf"},
        quiet={"semantic": ("AnyOf",)},
        system=POLICY_SYSTEM,
    ),
    Kind(
        ENTITIES["service_edge_router_policies"],
        ("semantic",),
        defaults={"semantic": "AnyOf"},
        quiet={"semantic": ("AnyOf",)},
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
