"""Explanations of one access decision and the smallest change that flips it.

:class:`Explanation` is what :meth:`harness.analysis.Analysis.explain` returns:
each service policy of the type with how its role lists judged the identity and
the service, the posture checks it requires and how they fare, the edge routers
of each side with the policies linking them, the session outcome, and a
suggestion with a ``fix``: a change in the ``what_if`` format that makes it so.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Iterable

from harness.analysis.posture import CheckResult

if TYPE_CHECKING:
    from harness.analysis import Analysis

KINDS_OF_SIDE = {"identity": "identities", "service": "services"}
ROLES_OF_SIDE = {"identity": "identityRoles", "service": "serviceRoles"}


def pandas():
    """The pandas module, or an ImportError saying how to get it."""
    try:
        import pandas as pd
    except ImportError as ex:  # pragma: no cover - depends on the install
        raise ImportError("tables need pandas: pip install 'ziti-edge-controller-py[notebooks]'") from ex
    return pd


@dataclass
class RoleCheck:
    """How one role list judged one entity."""

    roles: list[str]
    semantic: str
    matched: bool
    reason: str
    missing: list[str] = field(default_factory=list)  # attributes to add so that it matches (#attr entries)


@dataclass
class PolicyCheck:
    """One service policy of the explained type."""

    policy: str
    type: str
    identity: RoleCheck
    service: RoleCheck
    posture_checks: list[str] = field(default_factory=list)
    posture: list[CheckResult] = field(default_factory=list)

    @property
    def grants(self) -> bool:
        return self.identity.matched and self.service.matched

    @property
    def posture_ok(self) -> bool | None:
        """All required checks pass (True), one fails (False), or some cannot be told (None)."""
        results = [r.passing for r in self.posture]
        return False if False in results else None if None in results else True


@dataclass
class Explanation:
    """Why one identity can or cannot dial (or bind) one service."""

    identity: str
    service: str
    type: str
    allowed: bool
    policies: list[PolicyCheck]
    identity_routers: dict[str, list[str]]  # router -> edge router policies linking it to the identity
    service_routers: dict[str, list[str]]  # router -> service edge router policies linking it to the service
    common_routers: list[str]
    posture_checks: list[str]
    suggestion: str
    fix: dict | None = None  # the suggestion as a what-if change, when it is a network change
    other_types: list[str] = field(default_factory=list)  # the permissions of the other type
    outcome: tuple[int, str | None] = (0, None)  # what POST /sessions would answer

    @property
    def posture_ok(self) -> bool | None:
        """Some granting policy has all its posture checks passing (None: cannot tell)."""
        verdicts = [c.posture_ok for c in self.policies if c.grants]
        if not verdicts or True in verdicts:
            return True
        return None if None in verdicts else False

    @property
    def can_connect(self) -> bool:
        """Allowed by a service policy, posture not failing, and sharing at least one edge router."""
        return self.allowed and self.posture_ok is not False and bool(self.common_routers)

    def headline(self) -> str:
        verb = self.type.lower()
        if self.can_connect:
            return f"{self.identity} CAN {verb} {self.service}"
        if not self.allowed:
            other = f" (it may {' and '.join(t.lower() for t in self.other_types)})" if self.other_types else ""
            return f"{self.identity} CANNOT {verb} {self.service}: no {self.type} policy grants it{other}"
        if self.posture_ok is False:
            return f"{self.identity} CANNOT {verb} {self.service}: allowed, but posture checks fail"
        return f"{self.identity} CANNOT {verb} {self.service}: allowed, but no edge router is shared"

    def lines(self) -> list[str]:
        status, code = self.outcome
        out = [self.headline(), f"  session request: {status} {code or 'Created'}"]
        for check in self.policies:
            mark = "+" if check.grants else "-"
            verdict = "grants" if check.grants else "does not grant"
            out.append(
                f"  {mark} policy {check.policy} ({check.type}) {verdict}: "
                f"identity {check.identity.reason}; service {check.service.reason}"
            )
            for result in check.posture:
                out.append(f"      posture {result}")
        if not self.policies:
            out.append(f"  no {self.type} service policy exists")
        out.append(f"  identity routers: {_routers_text(self.identity_routers)}")
        out.append(f"  service routers: {_routers_text(self.service_routers)}")
        out.append(f"  common routers: {', '.join(self.common_routers) or 'none'}")
        out.append(f"  smallest change: {self.suggestion}")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def to_dict(self) -> dict:
        return asdict(self)

    def frame(self):
        """The policies considered as a pandas DataFrame (one row per policy)."""
        rows = [
            {
                "policy": c.policy,
                "type": c.type,
                "grants": c.grants,
                "identity": c.identity.reason,
                "service": c.service.reason,
                "posture": ", ".join(str(r) for r in c.posture),
                "posture_ok": c.posture_ok,
            }
            for c in self.policies
        ]
        return pandas().DataFrame(
            rows, columns=["policy", "type", "grants", "identity", "service", "posture", "posture_ok"]
        )

    def routers_frame(self):
        """Every router of either side: which policies link it to the identity and to the service."""
        rows = [
            {
                "router": r,
                "identity_policies": ", ".join(self.identity_routers.get(r, [])),
                "service_policies": ", ".join(self.service_routers.get(r, [])),
                "common": r in self.common_routers,
            }
            for r in sorted(set(self.identity_routers) | set(self.service_routers))
        ]
        return pandas().DataFrame(rows, columns=["router", "identity_policies", "service_policies", "common"])


def _routers_text(routers: dict[str, list[str]], limit: int = 8) -> str:
    if not routers:
        return "none"
    shown = [f"{r} (via {', '.join(p)})" for r, p in sorted(routers.items())[:limit]]
    more = f" and {len(routers) - limit} more" if len(routers) > limit else ""
    return "; ".join(shown) + more


def judge(roles: Iterable[str], semantic: str, name: str, attrs: set[str]) -> RoleCheck:
    """The role rules: ``@name``, ``#all``, ``#attr`` under AllOf/AnyOf; empty matches nothing."""
    roles = list(roles or [])
    if not roles:
        return RoleCheck(roles, semantic, False, "the role list is empty")
    if "@" + name in roles:
        return RoleCheck(roles, semantic, True, f"named as @{name}")
    if "#all" in roles:
        return RoleCheck(roles, semantic, True, "matched by #all")
    wanted = [r[1:] for r in roles if r.startswith("#")]
    if not wanted:
        return RoleCheck(roles, semantic, False, f"not among {roles}")
    have = [a for a in wanted if a in attrs]
    missing = [a for a in wanted if a not in attrs]
    if semantic == "AllOf":
        if not missing:
            return RoleCheck(roles, semantic, True, f"has all of {wanted}")
        return RoleCheck(roles, semantic, False, f"lacks {missing} (AllOf {wanted})", missing)
    if semantic != "AnyOf":
        return RoleCheck(roles, semantic, False, f"semantic {semantic!r} matches attributes never")
    if have:
        return RoleCheck(roles, semantic, True, f"has {have[0]} (AnyOf {wanted})")
    return RoleCheck(roles, semantic, False, f"has none of {wanted} (AnyOf)", missing[:1])


# -- the smallest change -----------------------------------------------------------------
def suggest(analysis: "Analysis", ex: Explanation) -> tuple[str, dict | None]:
    """(advice, what-if change) that flips the explained decision."""
    if not ex.allowed:
        text, fix = _grant(analysis, ex)
        if not ex.common_routers:
            router_text, router_fix = _route(analysis, ex)
            text, fix = f"{text}; then {router_text}", _merge(fix, router_fix)
        return text, fix
    if not ex.common_routers:
        return _route(analysis, ex)
    if ex.posture_ok is False:
        failing = [r for c in ex.policies if c.grants for r in c.posture if r.passing is False]
        hints = sorted({f"{r.name}: {r.hint}" for r in failing})
        return "allowed, but posture fails: " + "; ".join(hints), None
    return _remove(analysis, ex)


def _merge(*changes: dict | None) -> dict | None:
    """Several additive what-if changes as one; None if any is None.

    Entities merge by kind and name; a list field set by two changes gets the
    union (both started from the current list and added to it).
    """
    out: dict[str, dict[str, dict]] = {}
    for change in changes:
        if change is None:
            return None
        for kind, items in change.items():
            for item in items:
                merged = out.setdefault(kind, {}).setdefault(item["name"], {})
                for key, value in item.items():
                    if isinstance(value, list) and isinstance(merged.get(key), list):
                        value = sorted(set(merged[key]) | set(value))
                    merged[key] = value
    return {kind: list(items.values()) for kind, items in out.items()}


def _attrs(analysis: "Analysis", kind: str, name: str) -> set[str]:
    pop = analysis.populations[kind]
    return set(pop.attrs[pop.index[name]])


NEW_POLICY_COST = 2.5  # a new policy per pair grants nothing else, but adds an entity to look after
#: an identity's attributes say who someone is (#staff, #contractors): changing them to reach one service
#: costs more than naming them in a policy, so a policy edit wins whenever one exists
IDENTITY_ATTRIBUTE_COST = 2.0
ONLY_ATTRIBUTE = " (only an attribute change works here: no policy edit would grant it)"


def _grant(analysis: "Analysis", ex: Explanation) -> tuple[str, dict | None]:
    """The cheapest way to grant: edits, plus access others would gain on the side, plus failing posture."""
    options = [option for check in ex.policies for option in _grant_options(analysis, ex, check)]
    name = f"{ex.type.lower()}-{ex.identity}-{ex.service}"
    options.append(
        (
            NEW_POLICY_COST,
            f"create a {ex.type} service policy {name} with identityRoles [@{ex.identity}] "
            f"and serviceRoles [@{ex.service}]",
            {
                "servicePolicies": [
                    {
                        "name": name,
                        "type": ex.type,
                        "semantic": "AnyOf",
                        "identityRoles": ["@" + ex.identity],
                        "serviceRoles": ["@" + ex.service],
                    }
                ]
            },
        )
    )
    return _cheapest(options)


def _cheapest(options: list[tuple[float, str, dict | None]]) -> tuple[str, dict | None]:
    """The cheapest option's advice and change; when it changes an identity's attributes and no option
    leaves the identity as it is, the advice says so."""
    _, text, fix = min(options, key=lambda o: (o[0], o[1]))
    if _changes_identity(fix) and all(_changes_identity(change) for _, _, change in options):
        text += ONLY_ATTRIBUTE
    return text, fix


def _changes_identity(change: dict | None) -> bool:
    return bool(change) and any("roleAttributes" in item for item in change.get("identities", []))


def _grant_options(analysis: "Analysis", ex: Explanation, check: PolicyCheck) -> list[tuple[float, str, dict | None]]:
    """(cost, advice, change) for each way of making ``check`` grant."""
    failing = [r.name for r in check.posture if r.passing is False]
    out = []
    for id_cost, id_text, id_change in _side_options(analysis, ex, check, "identity"):
        for svc_cost, svc_text, svc_change in _side_options(analysis, ex, check, "service"):
            text = " and ".join(t for t in (id_text, svc_text) if t) + f" (policy {check.policy})"
            if failing:
                text += f"; its posture checks {failing} fail too"
            out.append((id_cost + svc_cost + len(failing), text, _merge(id_change, svc_change)))
    return out


def _side_options(analysis: "Analysis", ex: Explanation, check: PolicyCheck, side: str) -> list:
    """(cost, advice, change) making one side of ``check`` match: add attributes, or name the entity."""
    role_check = getattr(check, side)
    if role_check.matched:
        return [(0.0, "", {})]
    target, kind = (ex.identity, "identities") if side == "identity" else (ex.service, "services")
    extra = 0.0 if side == "identity" else 0.1  # NOTE: on a tie, prefer naming the identity in the policy
    out = []
    if role_check.missing:
        attrs = sorted(_attrs(analysis, kind, target) | set(role_check.missing))
        effects = _side_effects(analysis, ex, side, attrs=attrs)
        who = IDENTITY_ATTRIBUTE_COST if side == "identity" else 0.0
        out.append(
            (
                len(role_check.missing) + effects + extra + who,
                f"add attribute(s) {role_check.missing} to {side} {target}",
                {kind: [{"name": target, "roleAttributes": attrs}]},
            )
        )
    effects = _side_effects(analysis, ex, side, policy=check.policy)
    out.append(
        (
            1.0 + effects + extra,
            f"add @{target} to {check.policy}'s {side} roles",
            {
                "servicePolicies": [
                    {"name": check.policy, ROLES_OF_SIDE[side]: sorted({*role_check.roles, "@" + target})}
                ]
            },
        )
    )
    return out


def _side_effects(analysis: "Analysis", ex: Explanation, side: str, *, attrs=None, policy: str | None = None) -> int:
    """How many other (identity, service, type) accesses one edit would grant besides the explained one."""
    ids, svcs = analysis.populations["identities"], analysis.populations["services"]
    i, s = ids.index[ex.identity], svcs.index[ex.service]
    if side == "identity":
        old = {t: analysis.services_mask(i, t) for t in ("Dial", "Bind")}
        if attrs is not None:
            new = analysis.access_if(ex.identity, attrs)
        else:
            compiled = analysis.policy_named("servicePolicies", policy)
            new = {compiled.type: old[compiled.type] | svcs.mask(compiled.matches["serviceRoles"])}
        target = 1 << s
    else:
        old = {t: analysis.holders(ex.service, t) for t in ("Dial", "Bind")}
        if attrs is not None:
            new = analysis.holders_if(ex.service, attrs)
        else:
            compiled = analysis.policy_named("servicePolicies", policy)
            new = {compiled.type: old[compiled.type] | ids.mask(compiled.matches["identityRoles"])}
        target = 1 << i
    return sum((mask & ~old[t] & ~(target if t == ex.type else 0)).bit_count() for t, mask in new.items())


def _route(analysis: "Analysis", ex: Explanation) -> tuple[str, dict | None]:
    """Advice and change giving the identity and the service an edge router in common."""
    options = []
    if ex.service_routers:
        options += _router_options(
            analysis, "edgeRouterPolicies", "identity", ex.identity, set(ex.service_routers), 1.0
        )
        router = sorted(ex.service_routers)[0]
        name = f"routers-{ex.identity}"
        options.append(
            (
                2.0,
                f"create an edge router policy {name} giving {ex.identity} router {router}",
                {
                    "edgeRouterPolicies": [
                        {
                            "name": name,
                            "semantic": "AnyOf",
                            "identityRoles": ["@" + ex.identity],
                            "edgeRouterRoles": ["@" + router],
                        }
                    ]
                },
            )
        )
    if ex.identity_routers:
        options += _router_options(
            analysis, "serviceEdgeRouterPolicies", "service", ex.service, set(ex.identity_routers), 1.5
        )
        router = sorted(ex.identity_routers)[0]
        name = f"routers-{ex.service}"
        options.append(
            (
                2.5,
                f"create a service edge router policy {name} putting {ex.service} on router {router}",
                {
                    "serviceEdgeRouterPolicies": [
                        {
                            "name": name,
                            "semantic": "AnyOf",
                            "serviceRoles": ["@" + ex.service],
                            "edgeRouterRoles": ["@" + router],
                        }
                    ]
                },
            )
        )
    if not options:
        routers = analysis.populations["edgeRouters"].names
        if not routers:
            return "create an edge router, then edge router and service edge router policies for it", None
        router = sorted(routers)[0]
        erp, serp = f"routers-{ex.identity}", f"routers-{ex.service}"
        return (
            f"neither side has an edge router: create {erp} giving {ex.identity} router {router} and {serp} "
            f"putting {ex.service} on it",
            {
                "edgeRouterPolicies": [
                    {
                        "name": erp,
                        "semantic": "AnyOf",
                        "identityRoles": ["@" + ex.identity],
                        "edgeRouterRoles": ["@" + router],
                    }
                ],
                "serviceEdgeRouterPolicies": [
                    {
                        "name": serp,
                        "semantic": "AnyOf",
                        "serviceRoles": ["@" + ex.service],
                        "edgeRouterRoles": ["@" + router],
                    }
                ],
            },
        )
    return _cheapest(options)


def _router_options(analysis: "Analysis", kind: str, side: str, target: str, wanted: set[str], weight: float) -> list:
    """Existing policies of ``kind`` that would link ``target`` to one of the ``wanted`` routers."""
    options = []
    attrs = _attrs(analysis, KINDS_OF_SIDE[side], target)
    wire = ROLES_OF_SIDE[side]
    for policy in analysis.policies[kind]:
        if not wanted & set(analysis.policy_routers(policy)):
            continue
        check = judge(policy.roles[wire], policy.semantic, target, attrs)
        if check.matched:
            continue
        if check.missing:
            who = IDENTITY_ATTRIBUTE_COST if side == "identity" else 0.0
            options.append(
                (
                    weight * len(check.missing) + who,
                    f"add attribute(s) {check.missing} to {side} {target} (policy {policy.name} links a router)",
                    {KINDS_OF_SIDE[side]: [{"name": target, "roleAttributes": sorted(attrs | set(check.missing))}]},
                )
            )
        options.append(  # naming the entity always matches (@name wins over any semantic)
            (
                weight * 1.2,
                f"add @{target} to {policy.name}'s {side} roles",
                {kind: [{"name": policy.name, wire: sorted({*policy.roles[wire], "@" + target})}]},
            )
        )
    return options


def _remove(analysis: "Analysis", ex: Explanation) -> tuple[str, dict | None]:
    """Advice and change taking the identity out of every granting policy."""
    attrs = _attrs(analysis, "identities", ex.identity)
    removed: set[str] = set()
    steps, changes = [], []
    for check in ex.policies:
        if not check.grants:
            continue
        roles = check.identity.roles
        if "#all" in roles:
            steps.append(f"replace #all in {check.policy}'s identity roles")
            changes.append(None)
            continue
        if "@" + ex.identity in roles:
            steps.append(f"remove @{ex.identity} from {check.policy}'s identity roles")
            changes.append(
                {
                    "servicePolicies": [
                        {"name": check.policy, "identityRoles": [r for r in roles if r != "@" + ex.identity]}
                    ]
                }
            )
        wanted = [r[1:] for r in roles if r.startswith("#")]
        held = sorted(attrs & set(wanted))
        matched_by_attrs = bool(wanted) and (set(wanted) <= attrs if check.identity.semantic == "AllOf" else bool(held))
        if matched_by_attrs:
            # AnyOf: every matching attribute must go; AllOf: losing any one is enough.
            which = held if check.identity.semantic == "AnyOf" else held[:1]
            removed |= set(which)
            steps.append(f"remove attribute(s) {which} from {ex.identity} ({check.policy})")
    if removed:
        changes.append({"identities": [{"name": ex.identity, "roleAttributes": sorted(attrs - removed)}]})
    return "to remove access: " + "; ".join(steps), _merge(*changes)


__all__ = ["Explanation", "PolicyCheck", "RoleCheck", "judge", "suggest", "pandas"]
