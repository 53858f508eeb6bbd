"""Policy analysis: who can reach what, why, and what a change would do.

Works on a network (a file, a dict, or :func:`harness.network.export` of a live
controller) with its own small evaluator of the role rules, independent of the
controller's engine, so that the two can check each other.

* :meth:`Analysis.matrix`: identity x service -> dial, bind, usable routers;
* :meth:`Analysis.explain`: every policy considered, which role matched or
  failed and why, posture checks, routers in common and the policies linking
  them, and the smallest change that would grant or remove access;
* :meth:`Analysis.what_if` / :func:`access_diff`: who gains and loses what.
"""
from __future__ import annotations

import copy
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable

from harness.network import Network

DIAL, BIND = "Dial", "Bind"


@dataclass
class RoleCheck:
    """How one role list judged one entity."""

    roles: list[str]
    semantic: str
    matched: bool
    reason: str
    missing: list[str] = field(default_factory=list)  # attributes the entity lacks (#attr entries)


@dataclass
class PolicyCheck:
    policy: str
    type: str
    identity: RoleCheck
    service: RoleCheck
    posture_checks: list[str] = field(default_factory=list)

    @property
    def grants(self) -> bool:
        return self.identity.matched and self.service.matched


@dataclass
class Explanation:
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

    @property
    def can_connect(self) -> bool:
        """Allowed by a service policy and sharing at least one edge router."""
        return self.allowed and bool(self.common_routers)

    def lines(self) -> list[str]:
        out = [f"{self.identity} {'CAN' if self.can_connect else 'CANNOT'} {self.type.lower()} {self.service}"]
        for check in self.policies:
            verdict = "grants" if check.grants else "does not grant"
            out.append(f"  policy {check.policy} ({check.type}) {verdict}: identity {check.identity.reason}; service {check.service.reason}")
            if check.posture_checks:
                out.append(f"    posture checks required: {', '.join(check.posture_checks)}")
        if not self.policies:
            out.append(f"  no {self.type} service policy names either side")
        out.append(f"  routers: identity {sorted(self.identity_routers)}, service {sorted(self.service_routers)}, common {self.common_routers}")
        out.append(f"  smallest change: {self.suggestion}")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


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
    if have:
        return RoleCheck(roles, semantic, True, f"has {have[0]} (AnyOf {wanted})")
    return RoleCheck(roles, semantic, False, f"has none of {wanted} (AnyOf)", missing[:1])


class Analysis:
    """Access decisions of one network state."""

    def __init__(self, network: Network | dict):
        self.network = network if isinstance(network, Network) else Network.from_dict(network)
        ents = self.network.entities
        self.identities = {i["name"]: set(i.get("roleAttributes") or []) for i in ents.get("identities", [])}
        self.services = {s["name"]: set(s.get("roleAttributes") or []) for s in ents.get("services", [])}
        self.routers = {r["name"]: set(r.get("roleAttributes") or []) for r in ents.get("edgeRouters", [])}
        self.posture = {p["name"]: set(p.get("roleAttributes") or []) for p in ents.get("postureChecks", [])}
        self.service_policies = ents.get("servicePolicies", [])
        self.router_policies = ents.get("edgeRouterPolicies", [])
        self.service_router_policies = ents.get("serviceEdgeRouterPolicies", [])
        self._build()

    @classmethod
    def from_controller(cls, client) -> "Analysis":
        from harness.network import export

        return cls(export(client))

    # -- indexes ------------------------------------------------------------
    def _members(self, roles, semantic, population: dict[str, set[str]]) -> set[str]:
        roles = list(roles or [])
        if not roles:
            return set()
        if "#all" in roles:
            return set(population)
        named = {r[1:] for r in roles if r.startswith("@") and r[1:] in population}
        wanted = {r[1:] for r in roles if r.startswith("#")}
        if not wanted:
            return named
        by_attr = self._by_attr(population)
        sets = [by_attr.get(a, set()) for a in wanted]
        matched = set.intersection(*sets) if semantic == "AllOf" else set().union(*sets)
        return matched | named

    def _by_attr(self, population: dict[str, set[str]]) -> dict[str, set[str]]:
        key = id(population)
        if key not in self._attr_cache:
            index: dict[str, set[str]] = defaultdict(set)
            for name, attrs in population.items():
                for attr in attrs:
                    index[attr].add(name)
            self._attr_cache[key] = index
        return self._attr_cache[key]

    def _build(self) -> None:
        self._attr_cache: dict[int, dict] = {}
        self.access = {DIAL: defaultdict(set), BIND: defaultdict(set)}  # identity -> services
        for policy in self.service_policies:
            semantic = policy.get("semantic", "AnyOf")
            ids = self._members(policy.get("identityRoles"), semantic, self.identities)
            svcs = self._members(policy.get("serviceRoles"), semantic, self.services)
            for identity in ids:
                self.access[policy.get("type", DIAL)][identity] |= svcs
        self.identity_routers: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for policy in self.router_policies:
            semantic = policy.get("semantic", "AnyOf")
            routers = self._members(policy.get("edgeRouterRoles"), semantic, self.routers)
            for identity in self._members(policy.get("identityRoles"), semantic, self.identities):
                for router in routers:
                    self.identity_routers[identity][router].append(policy["name"])
        self.service_routers: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for policy in self.service_router_policies:
            semantic = policy.get("semantic", "AnyOf")
            routers = self._members(policy.get("edgeRouterRoles"), semantic, self.routers)
            for service in self._members(policy.get("serviceRoles"), semantic, self.services):
                for router in routers:
                    self.service_routers[service][router].append(policy["name"])

    # -- questions ------------------------------------------------------------
    def can(self, identity: str, service: str, type: str = DIAL) -> bool:
        return service in self.access[type].get(identity, ())

    def routers_for(self, identity: str, service: str) -> list[str]:
        return sorted(set(self.identity_routers.get(identity, {})) & set(self.service_routers.get(service, {})))

    def matrix(self, identities: Iterable[str] | None = None, services: Iterable[str] | None = None) -> dict:
        """``{(identity, service): {"dial", "bind", "routers"}}`` for every pair with any access."""
        wanted_ids = set(identities) if identities is not None else None
        wanted_svcs = set(services) if services is not None else None
        out: dict[tuple[str, str], dict] = {}
        for type_ in (DIAL, BIND):
            for identity, svcs in self.access[type_].items():
                if wanted_ids is not None and identity not in wanted_ids:
                    continue
                for service in svcs if wanted_svcs is None else svcs & wanted_svcs:
                    entry = out.setdefault((identity, service), {"dial": False, "bind": False, "routers": None})
                    entry[type_.lower()] = True
        return out

    def matrix_frame(self, with_routers: bool = False):
        """The matrix as a pandas DataFrame (identity rows, service columns, "D", "B", "DB" or "")."""
        import pandas as pd

        cells: dict[str, dict[str, str]] = defaultdict(dict)
        for (identity, service), entry in self.matrix().items():
            mark = ("D" if entry["dial"] else "") + ("B" if entry["bind"] else "")
            if with_routers and not self.routers_for(identity, service):
                mark = mark.lower()
            cells[service][identity] = mark
        frame = pd.DataFrame(cells, index=sorted(self.identities), columns=sorted(self.services)).fillna("")
        return frame

    def explain(self, identity: str, service: str, type: str = DIAL) -> Explanation:
        """Why ``identity`` can or cannot ``type`` ``service``, and the smallest change that flips it."""
        if identity not in self.identities or service not in self.services:
            raise KeyError(f"unknown identity {identity!r} or service {service!r}")
        id_attrs, svc_attrs = self.identities[identity], self.services[service]
        checks = []
        for policy in self.service_policies:
            if policy.get("type", DIAL) != type:
                continue
            semantic = policy.get("semantic", "AnyOf")
            checks.append(PolicyCheck(
                policy["name"], type, judge(policy.get("identityRoles"), semantic, identity, id_attrs),
                judge(policy.get("serviceRoles"), semantic, service, svc_attrs),
                self._posture_of(policy)))
        allowed = any(check.grants for check in checks)
        id_routers = {r: list(p) for r, p in self.identity_routers.get(identity, {}).items()}
        svc_routers = {r: list(p) for r, p in self.service_routers.get(service, {}).items()}
        common = sorted(set(id_routers) & set(svc_routers))
        posture = sorted({c for check in checks if check.grants for c in check.posture_checks})
        explanation = Explanation(identity, service, type, allowed, checks, id_routers, svc_routers, common, posture, "")
        explanation.suggestion = self._suggest(explanation)
        return explanation

    def _posture_of(self, policy: dict) -> list[str]:
        roles = policy.get("postureCheckRoles") or []
        return sorted(self._members(roles, policy.get("semantic", "AnyOf"), self.posture))

    def _suggest(self, ex: Explanation) -> str:
        if ex.allowed:
            if not ex.common_routers:
                return self._suggest_router(ex)
            attrs = self.identities[ex.identity]
            removals = [self._removal(ex, check, attrs) for check in ex.policies if check.grants]
            return "to remove access: " + "; ".join(removals)
        options = [option for check in ex.policies for option in [self._grant(ex, check)] if option is not None]
        if not options:
            return f"create a {ex.type} service policy with identityRoles [@{ex.identity}] and serviceRoles [@{ex.service}]"
        return min(options)[1]

    @staticmethod
    def _removal(ex: Explanation, check: PolicyCheck, attrs: set[str]) -> str:
        reason = check.identity.reason
        if reason.startswith("named as"):
            return f"remove @{ex.identity} from {check.policy}'s identity roles"
        if reason.startswith("matched by #all"):
            return f"replace #all in {check.policy}'s identity roles"
        held = sorted(attrs & {r[1:] for r in check.identity.roles if r.startswith("#")})
        # AnyOf: every matching attribute must go; AllOf: losing any one is enough.
        which = held if check.identity.semantic == "AnyOf" else held[:1]
        return f"remove attribute(s) {which} from {ex.identity} ({check.policy}: {reason})"

    @staticmethod
    def _grant(ex: Explanation, check: PolicyCheck) -> tuple[float, str] | None:
        """(cost, advice) for making ``check`` grant; service-side edits cost a little more (wider effect)."""
        cost, steps = 0.0, []
        for side, target, role_check, weight in (("identity", ex.identity, check.identity, 1.0),
                                                 ("service", ex.service, check.service, 1.5)):
            if role_check.matched:
                continue
            if not role_check.roles:
                return None
            if role_check.missing:
                steps.append(f"add attribute(s) {role_check.missing} to {side} {target}")
                cost += weight * len(role_check.missing)
            else:
                steps.append(f"add @{target} to {check.policy}'s {side} roles")
                cost += weight
        return cost, " and ".join(steps) + f" (policy {check.policy})"

    def _suggest_router(self, ex: Explanation) -> str:
        if ex.service_routers:
            router = sorted(ex.service_routers)[0]
            return f"allowed but no shared edge router: add an edge router policy giving {ex.identity} router {router}"
        if ex.identity_routers:
            router = sorted(ex.identity_routers)[0]
            return f"allowed but no shared edge router: add a service edge router policy giving {ex.service} router {router}"
        return "allowed but neither side has an edge router: add edge router and service edge router policies"

    # -- change -------------------------------------------------------------
    def what_if(self, change: dict) -> "AccessDiff":
        """Apply ``change`` (kind -> list of entities to add or replace by name) to a copy; diff the access."""
        data = self.network.to_dict()
        for key, items in change.items():
            existing = {item["name"]: item for item in data.get(key, [])}
            for item in items:
                if item.get("_delete"):
                    existing.pop(item["name"], None)
                else:
                    existing[item["name"]] = {**existing.get(item["name"], {}), **copy.deepcopy(item)}
            data[key] = list(existing.values())
        return access_diff(self, Analysis(data))


@dataclass
class AccessDiff:
    gained: list[tuple[str, str, str]]  # (identity, service, type)
    lost: list[tuple[str, str, str]]

    def __bool__(self) -> bool:
        return bool(self.gained or self.lost)


def access_diff(before: Analysis, after: Analysis) -> AccessDiff:
    """Who gains and loses which access between two network states."""
    gained, lost = [], []
    for type_ in (DIAL, BIND):
        for identity in set(before.access[type_]) | set(after.access[type_]):
            old = before.access[type_].get(identity, set())
            new = after.access[type_].get(identity, set())
            gained += [(identity, s, type_) for s in sorted(new - old)]
            lost += [(identity, s, type_) for s in sorted(old - new)]
    return AccessDiff(sorted(gained), sorted(lost))
