"""Policy analysis: who can reach what, why, and what a change would do.

Works on a network (a file, a dict, or :func:`harness.network.export` of a live
controller) with its own small evaluator of the role rules, independent of the
controller's engine, so that the two can check each other.

* :meth:`Analysis.matrix`: identity x service -> dial, bind, usable routers;
* :meth:`Analysis.explain`: every policy considered, which role matched or
  failed and why, posture checks, routers in common and the policies linking
  them, and the smallest change that would grant or remove access;
* :meth:`Analysis.what_if` / :func:`access_diff`: who gains and loses what.

Entities with the same attributes form a class; policies are evaluated per
class and results are bit masks over the populations, so a 2,000 x 1,000
matrix or one explanation at 100,000 identities costs milliseconds.
Results are plain objects; ``frame()`` methods give pandas DataFrames when
pandas is installed.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from harness.analysis.access import AccessDiff, AccessMatrix, access_diff
from harness.analysis.explain import Explanation, PolicyCheck, RoleCheck, judge, suggest
from harness.analysis.posture import PostureState, evaluate
from harness.network import Network
from harness.network.populations import ALL_ROLE, BIND, DIAL, TYPES, Match, Population, mask_of, semantic_of, type_of

#: role lists of each policy kind -> the population they select from
ROLE_LISTS = {
    "servicePolicies": {
        "identityRoles": "identities",
        "serviceRoles": "services",
        "postureCheckRoles": "postureChecks",
    },
    "edgeRouterPolicies": {"identityRoles": "identities", "edgeRouterRoles": "edgeRouters"},
    "serviceEdgeRouterPolicies": {"serviceRoles": "services", "edgeRouterRoles": "edgeRouters"},
}
SESSION_OK = (201, None)


@dataclass
class CompiledPolicy:
    """One policy with its role lists resolved against the populations."""

    name: str
    kind: str
    type: str | None
    semantic: str
    roles: dict[str, list[str]]
    matches: dict[str, Match]
    wanted: dict[str, frozenset[str] | None]  # the #attr entries of each role list (None: #all)
    _names: dict[str, list[str]] = field(default_factory=dict, repr=False)


class Analysis:
    """Access decisions of one network state.

    Args:
        network: a :class:`~harness.network.Network`, a network dict, YAML text or a file path.
        posture: identity name -> posture data (a dict or
            :class:`~harness.analysis.posture.PostureState`); None leaves posture checks
            unevaluated, an identity missing from the mapping reported nothing.
    """

    def __init__(self, network: Network | dict | str | Path, posture: Mapping[str, Any] | None = None):
        if isinstance(network, (str, Path)):
            network = Network.from_yaml(network)
        self.network = network if isinstance(network, Network) else Network.from_dict(network)
        ents = self.network.entities
        self.populations = {
            key: Population(ents.get(key, [])) for key in ("identities", "services", "edgeRouters", "postureChecks")
        }
        self._ids, self._svcs = self.populations["identities"], self.populations["services"]
        self._routers, self._checks = self.populations["edgeRouters"], self.populations["postureChecks"]
        self.check_items = {item["name"]: item for item in ents.get("postureChecks", [])}
        self.posture_data = None if posture is None else {k: PostureState.coerce(v) for k, v in posture.items()}
        self.service_policies = ents.get("servicePolicies", [])
        self.policies = {key: [self._compile(key, p) for p in ents.get(key, [])] for key in ROLE_LISTS}
        self._policy_names = {key: {p.name: p for p in policies} for key, policies in self.policies.items()}
        self._build()

    @classmethod
    def from_controller(cls, client, posture: bool | None = None) -> "Analysis":
        """Analyse a live controller through its management API.

        Args:
            client: a logged-in admin ``ZitiClient``.
            posture: read each identity's posture data; by default only when
                the network has posture checks.

        Returns:
            An analysis of the exported network.
        """
        from harness.network import export

        network = export(client)
        states = None
        if posture or (posture is None and network.entities.get("postureChecks")):
            wanted = set(network.names("identities"))
            states = {
                record["name"]: client.management.call("getIdentityPostureData", record["id"])
                for record in client.management.iterate("listIdentities", page_size=500)
                if record["name"] in wanted
            }
        return cls(network, posture=states)

    # -- indexes ----------------------------------------------------------------------
    def _compile(self, kind: str, policy: dict) -> CompiledPolicy:
        semantic = semantic_of(policy.get("semantic"))
        roles = {wire: list(policy.get(wire) or []) for wire in ROLE_LISTS[kind]}
        matches = {wire: self.populations[pop].match(roles[wire], semantic) for wire, pop in ROLE_LISTS[kind].items()}
        ptype = type_of(policy.get("type")) if kind == "servicePolicies" else None
        wanted = {
            wire: None if ALL_ROLE in roles[wire] else frozenset(r[1:] for r in roles[wire] if r.startswith("#"))
            for wire in roles
        }
        return CompiledPolicy(policy["name"], kind, ptype, semantic, roles, matches, wanted)

    def _build(self) -> None:
        self._access = {t: ([0] * len(self._ids.classes), {}) for t in TYPES}
        for policy in self.policies["servicePolicies"]:
            self._add(
                self._access[policy.type],
                policy.matches["identityRoles"],
                self._svcs.mask(policy.matches["serviceRoles"]),
            )
        self._identity_routers = ([0] * len(self._ids.classes), {})
        for policy in self.policies["edgeRouterPolicies"]:
            self._add(
                self._identity_routers,
                policy.matches["identityRoles"],
                self._routers.mask(policy.matches["edgeRouterRoles"]),
            )
        self._service_routers = ([0] * len(self._svcs.classes), {})
        for policy in self.policies["serviceEdgeRouterPolicies"]:
            self._add(
                self._service_routers,
                policy.matches["serviceRoles"],
                self._routers.mask(policy.matches["edgeRouterRoles"]),
            )
        self._reach_cache: dict[int, int] = {}
        self._memo: dict[tuple, Any] = {}
        self._router_groups: dict[int, int] | None = None

    @staticmethod
    def _add(table: tuple[list[int], dict[int, int]], match: Match, mask: int) -> None:
        if not mask:
            return
        by_class, by_named = table
        for cls in match.classes:
            by_class[cls] |= mask
        for index in match.named:
            by_named[index] = by_named.get(index, 0) | mask

    def _lookup(self, table, pop: Population, index: int) -> int:
        by_class, by_named = table
        return by_class[pop.class_of[index]] | by_named.get(index, 0)

    def services_mask(self, identity: int, type: str | None = None) -> int:
        """Services (as a mask) identity number ``identity`` may ``type``, or either when None."""
        if type is None:
            return self.services_mask(identity, DIAL) | self.services_mask(identity, BIND)
        return self._lookup(self._access[type_of(type)], self._ids, identity)

    def identity_router_mask(self, identity: int) -> int:
        return self._lookup(self._identity_routers, self._ids, identity)

    def service_router_mask(self, service: int) -> int:
        return self._lookup(self._service_routers, self._svcs, service)

    def reach_mask(self, router_mask: int) -> int:
        """Services served by at least one router of ``router_mask``."""
        if router_mask not in self._reach_cache:
            if self._router_groups is None:
                groups: dict[int, list[int]] = {}
                for service in range(len(self._svcs)):
                    groups.setdefault(self.service_router_mask(service), []).append(service)
                self._router_groups = {
                    mask: mask_of(members, len(self._svcs)) for mask, members in groups.items() if mask
                }
            reach = 0
            for routers, services in self._router_groups.items():
                if routers & router_mask:
                    reach |= services
            self._reach_cache[router_mask] = reach
        return self._reach_cache[router_mask]

    def usable_mask(self, identity: int) -> int:
        """Services the identity may dial or bind and shares an edge router with."""
        return self.services_mask(identity) & self.reach_mask(self.identity_router_mask(identity))

    # -- populations by name (compatibility views) -----------------------------------------
    @property
    def identities(self) -> dict[str, set[str]]:
        return {n: set(a) for n, a in zip(self._ids.names, self._ids.attrs)}

    @property
    def services(self) -> dict[str, set[str]]:
        return {n: set(a) for n, a in zip(self._svcs.names, self._svcs.attrs)}

    @property
    def routers(self) -> dict[str, set[str]]:
        return {n: set(a) for n, a in zip(self._routers.names, self._routers.attrs)}

    @property
    def posture_checks(self) -> dict[str, set[str]]:
        return {n: set(a) for n, a in zip(self._checks.names, self._checks.attrs)}

    # -- questions ------------------------------------------------------------------------
    def _pair(self, identity: str, service: str) -> tuple[int, int]:
        return self._ids.position(identity, "identity"), self._svcs.position(service, "service")

    def can(self, identity: str, service: str, type: str = DIAL) -> bool:
        """Whether a service policy lets ``identity`` ``type`` ``service``."""
        if identity not in self._ids.index or service not in self._svcs.index:
            return False
        i, s = self._pair(identity, service)
        return bool(self.services_mask(i, type) >> s & 1)

    def permissions(self, identity: str, service: str) -> list[str]:
        """``["Bind", "Dial"]``, one of them or ``[]``, in wire order."""
        return [t for t in (BIND, DIAL) if self.can(identity, service, t)]

    def services_of(self, identity: str, type: str | None = None) -> list[str]:
        """Services ``identity`` may dial, bind, or either (``type=None``), by name."""
        return sorted(self._svcs.names_of(self.services_mask(self._ids.position(identity, "identity"), type)))

    def identities_of(self, service: str, type: str | None = None) -> list[str]:
        s = self._svcs.position(service, "service")
        return sorted(n for i, n in enumerate(self._ids.names) if self.services_mask(i, type) >> s & 1)

    def routers_for(self, identity: str, service: str) -> list[str]:
        """Edge routers both the identity may use and the service is served by."""
        i, s = self._pair(identity, service)
        return sorted(self._routers.names_of(self.identity_router_mask(i) & self.service_router_mask(s)))

    def advice(self, identity: str, service: str) -> dict:
        """The management policy advice, by names: access flags, router counts, common routers."""
        i, s = self._pair(identity, service)
        mine, theirs = self.identity_router_mask(i), self.service_router_mask(s)
        return {
            "isDialAllowed": self.can(identity, service, DIAL),
            "isBindAllowed": self.can(identity, service, BIND),
            "identityRouterCount": mine.bit_count(),
            "serviceRouterCount": theirs.bit_count(),
            "commonRouters": sorted(self._routers.names_of(mine & theirs)),
        }

    def posture_state(self, identity: str) -> PostureState | None:
        if self.posture_data is None:
            return None
        return self.posture_data.get(identity) or PostureState()

    def policy_named(self, kind: str, name: str) -> CompiledPolicy:
        return self._policy_names[kind][name]

    def policy_posture(self, policy: CompiledPolicy) -> list[str]:
        """Names of the posture checks a service policy requires."""
        if "checks" not in policy._names:
            policy._names["checks"] = sorted(
                self._checks.names_of(self._checks.mask(policy.matches["postureCheckRoles"]))
            )
        return policy._names["checks"]

    def linking(self, identity: str, service: str, type: str = DIAL) -> list[CompiledPolicy]:
        """The service policies of ``type`` that match both the identity and the service."""
        i, s = self._pair(identity, service)
        return [
            p
            for p in self.policies["servicePolicies"]
            if p.type == type_of(type)
            and self._ids.contains(p.matches["identityRoles"], i)
            and self._svcs.contains(p.matches["serviceRoles"], s)
        ]

    def posture_ok(self, identity: str, service: str, type: str = DIAL) -> bool | None:
        """Whether some linking policy has all its posture checks passing (None: cannot tell)."""
        state, verdicts = self.posture_state(identity), []
        for policy in self.linking(identity, service, type):
            results = [evaluate(self.check_items[name], state).passing for name in self.policy_posture(policy)]
            verdicts.append(False if False in results else None if None in results else True)
        if not verdicts or True in verdicts:
            return True
        return None if None in verdicts else False

    def posture_refused_mask(self, identity: int, type: str) -> int:
        """Services (mask) identity number ``identity`` may ``type`` only through policies whose posture fails.

        Zero without posture data: unknown posture does not refuse, as in the controller.
        """
        if self.posture_data is None or not self.check_items:
            return 0
        name, ok, failing = self._ids.names[identity], 0, 0
        state = self.posture_state(name)
        for policy in self.policies["servicePolicies"]:
            if policy.type != type_of(type) or not self._ids.contains(policy.matches["identityRoles"], identity):
                continue
            services = self._svcs.mask(policy.matches["serviceRoles"])
            if any(evaluate(self.check_items[check], state).passing is False for check in self.policy_posture(policy)):
                failing |= services
            else:
                ok |= services
        return failing & ~ok

    def session_outcome(self, identity: str, service: str, type: str = DIAL) -> tuple[int, str | None]:
        """What ``POST /sessions`` would answer: ``(201, None)`` or ``(status, error code)``.

        The checks run in the controller's order: permission (404), type (400),
        posture (409; unknown posture does not refuse) and edge routers (400).
        """
        permissions = self.permissions(identity, service)
        if not permissions:
            return 404, "NOT_FOUND"
        if type_of(type) not in permissions:
            return 400, "COULD_NOT_VALIDATE"
        if self.posture_ok(identity, service, type) is False:
            return 409, "INVALID_POSTURE"
        if not self.routers_for(identity, service):
            return 400, "NO_EDGE_ROUTERS_AVAILABLE"
        return SESSION_OK

    # -- the matrix -------------------------------------------------------------------------
    def matrix(self, identities: Iterable[str] | None = None, services: Iterable[str] | None = None) -> "AccessMatrix":
        """Identity x service access: ``{(identity, service): {"dial", "bind", "routers"}}`` for pairs with any.

        The mapping is computed lazily; ``counts()``, ``codes()`` and
        ``frame()`` summarise it without building a dict per pair.
        """
        ids = sorted(self._ids.names) if identities is None else list(identities)
        svcs = sorted(self._svcs.names) if services is None else list(services)
        return AccessMatrix(self, ids, svcs)

    def matrix_frame(self, with_routers: bool = False):
        """The matrix as a pandas DataFrame (identity rows, service columns, "D", "B", "DB" or "").

        With ``with_routers``, pairs allowed but sharing no edge router are in lower case.
        """
        return self.matrix().frame(with_routers=with_routers)

    # -- counterfactuals (used to weigh suggested changes) -------------------------------------
    def access_if(self, identity: str, attrs: Iterable[str]) -> dict[str, int]:
        """Services (masks by type) ``identity`` would reach if it had exactly ``attrs``."""
        key = ("access", identity, frozenset(attrs))
        if key not in self._memo:
            i, out = self._ids.position(identity, "identity"), {t: 0 for t in TYPES}
            for policy in self.policies["servicePolicies"]:
                if _selects(policy, "identityRoles", i, key[2]):
                    out[policy.type] |= self._svcs.mask(policy.matches["serviceRoles"])
            self._remember(key, out)
        return self._memo[key]

    def holders(self, service: str, type: str) -> int:
        """Identities (as a mask) that may ``type`` ``service`` now."""
        key = ("holders", service, type_of(type))
        if key not in self._memo:
            s, (by_class, by_named), mask = self._svcs.position(service, "service"), self._access[key[2]], 0
            for cls, services in enumerate(by_class):
                if services >> s & 1:
                    mask |= self._ids.class_mask(cls)
            for index, services in by_named.items():
                if services >> s & 1:
                    mask |= 1 << index
            self._remember(key, mask)
        return self._memo[key]

    def holders_if(self, service: str, attrs: Iterable[str]) -> dict[str, int]:
        """Identities (masks by type) that would reach ``service`` if it had exactly ``attrs``."""
        key = ("holders_if", service, frozenset(attrs))
        if key not in self._memo:
            s, out = self._svcs.position(service, "service"), {t: 0 for t in TYPES}
            for policy in self.policies["servicePolicies"]:
                if _selects(policy, "serviceRoles", s, key[2]):
                    out[policy.type] |= self._ids.mask(policy.matches["identityRoles"])
            self._remember(key, out)
        return self._memo[key]

    def _remember(self, key: tuple, value: Any) -> None:
        if len(self._memo) > 4096:  # NOTE(analysis): a bounded memo; explanations ask for a few keys each
            self._memo.clear()
        self._memo[key] = value

    # -- explanations ----------------------------------------------------------------------
    def explain(self, identity: str, service: str, type: str = DIAL) -> Explanation:
        """Why ``identity`` can or cannot ``type`` ``service``, and the smallest change that flips it."""
        i, s = self._pair(identity, service)
        ptype, state = type_of(type), self.posture_state(identity)
        id_attrs, svc_attrs = set(self._ids.attrs[i]), set(self._svcs.attrs[s])
        checks = []
        for policy in self.policies["servicePolicies"]:
            if policy.type != ptype:
                continue
            names = self.policy_posture(policy)
            checks.append(
                PolicyCheck(
                    policy.name,
                    ptype,
                    judge(policy.roles["identityRoles"], policy.semantic, identity, id_attrs),
                    judge(policy.roles["serviceRoles"], policy.semantic, service, svc_attrs),
                    list(names),
                    [evaluate(self.check_items[name], state) for name in names],
                )
            )
        checks.sort(key=lambda c: (not c.grants, c.policy))
        id_routers = self._linking_routers("edgeRouterPolicies", "identityRoles", self._ids, i)
        svc_routers = self._linking_routers("serviceEdgeRouterPolicies", "serviceRoles", self._svcs, s)
        ex = Explanation(
            identity,
            service,
            ptype,
            any(c.grants for c in checks),
            checks,
            id_routers,
            svc_routers,
            sorted(set(id_routers) & set(svc_routers)),
            sorted({n for c in checks if c.grants for n in c.posture_checks}),
            "",
        )
        ex.other_types = [t for t in self.permissions(identity, service) if t != ptype]
        ex.outcome = self.session_outcome(identity, service, ptype)
        ex.suggestion, ex.fix = suggest(self, ex)
        return ex

    def _linking_routers(self, kind: str, wire: str, pop: Population, index: int) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for policy in self.policies[kind]:
            if pop.contains(policy.matches[wire], index):
                for router in self.policy_routers(policy):
                    out.setdefault(router, []).append(policy.name)
        return out

    def policy_routers(self, policy: CompiledPolicy) -> list[str]:
        """Names of the edge routers an edge router or service edge router policy selects."""
        if "routers" not in policy._names:
            policy._names["routers"] = self._routers.names_of(self._routers.mask(policy.matches["edgeRouterRoles"]))
        return policy._names["routers"]

    # -- change ----------------------------------------------------------------------------
    def with_change(self, change: dict | Callable[[dict], Any]) -> "Analysis":
        """A new analysis of this network with ``change`` applied (posture data kept).

        Args:
            change: kind -> list of entities merged by name (``"_delete": True``
                removes one), or a function that edits the network dict in place.
        """
        data = self.network.to_dict()
        if callable(change):
            change(data)
        else:
            data = apply_change(data, change)
        return Analysis(data, posture=self.posture_data)

    def what_if(self, change: dict | Callable[[dict], Any]) -> "AccessDiff":
        """Apply ``change`` to a copy (see :meth:`with_change`); return who gains and loses what."""
        return access_diff(self, self.with_change(change))


def _selects(policy: CompiledPolicy, wire: str, index: int, attrs: frozenset[str]) -> bool:
    """Whether a role list of ``policy`` selects entity ``index`` if it had ``attrs``."""
    if index in policy.matches[wire].named:
        return True
    wanted = policy.wanted[wire]
    if wanted is None:  # #all
        return True
    if not wanted:
        return False
    if policy.semantic == "AllOf":
        return wanted <= attrs
    return policy.semantic == "AnyOf" and not wanted.isdisjoint(attrs)


def apply_change(data: dict, change: dict) -> dict:
    """``data`` with ``change`` merged in: entities by name, fields replaced, ``_delete`` removes."""
    data = copy.deepcopy(data)
    for key, items in change.items():
        existing = {item["name"]: item for item in data.get(key, [])}
        for item in items:
            if item.get("_delete"):
                existing.pop(item["name"], None)
            else:
                existing[item["name"]] = {**existing.get(item["name"], {}), **copy.deepcopy(item)}
        data[key] = list(existing.values())
    return {key: items for key, items in data.items() if items}


__all__ = [
    "AccessDiff",
    "AccessMatrix",
    "Analysis",
    "Explanation",
    "PolicyCheck",
    "RoleCheck",
    "access_diff",
    "apply_change",
    "judge",
    "DIAL",
    "BIND",
]
