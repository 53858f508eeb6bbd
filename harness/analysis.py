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
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

from harness.explain import Explanation, PolicyCheck, RoleCheck, judge, pandas, suggest
from harness.network import Network
from harness.posture import PostureState, evaluate

DIAL, BIND = "Dial", "Bind"
TYPES = (DIAL, BIND)
ALL_ROLE = "#all"
#: role lists of each policy kind -> the population they select from
ROLE_LISTS = {
    "servicePolicies": {"identityRoles": "identities", "serviceRoles": "services", "postureCheckRoles": "postureChecks"},
    "edgeRouterPolicies": {"identityRoles": "identities", "edgeRouterRoles": "edgeRouters"},
    "serviceEdgeRouterPolicies": {"serviceRoles": "services", "edgeRouterRoles": "edgeRouters"},
}
SESSION_OK = (201, None)


def semantic_of(value: Any) -> str:
    text = str(value or "AnyOf").lower()
    return {"allof": "AllOf", "anyof": "AnyOf"}.get(text, text)


def type_of(value: Any) -> str:
    return BIND if str(value or DIAL).lower() == "bind" else DIAL


def bits(mask: int) -> list[int]:
    """Indexes of the set bits of ``mask``, ascending."""
    text, out = bin(mask)[:1:-1], []
    index = text.find("1")
    while index >= 0:
        out.append(index)
        index = text.find("1", index + 1)
    return out


def mask_of(indexes: Iterable[int], size: int) -> int:
    buffer = bytearray((size + 7) // 8)
    for index in indexes:
        buffer[index >> 3] |= 1 << (index & 7)
    return int.from_bytes(buffer, "little")


@dataclass(frozen=True)
class Match:
    """Who a role list selects: whole attribute classes plus entities named by ``@name``."""

    classes: frozenset[int]
    named: frozenset[int]


class Population:
    """The entities of one kind: names, attributes and attribute classes."""

    def __init__(self, items: list[dict]):
        self.names = [item["name"] for item in items]
        self.index = {name: i for i, name in enumerate(self.names)}
        self.attrs = [frozenset(item.get("roleAttributes") or ()) for item in items]
        groups: dict[frozenset, list[int]] = {}
        for i, attrs in enumerate(self.attrs):
            groups.setdefault(attrs, []).append(i)
        self.classes, self.members = list(groups), list(groups.values())
        self.class_of = [0] * len(self.names)
        for cls, members in enumerate(self.members):
            for i in members:
                self.class_of[i] = cls
        self.all_classes = frozenset(range(len(self.classes)))
        self._class_masks: list[int] | None = None
        self._masks: dict[Match, int] = {}

    def __len__(self) -> int:
        return len(self.names)

    def match(self, roles: Iterable[str] | None, semantic: str) -> Match:
        """The reference rule: ``#all``; ``@name``; ``#attr`` entries under AllOf/AnyOf; empty is nothing."""
        roles = list(roles or [])
        if ALL_ROLE in roles:
            return Match(self.all_classes, frozenset())
        named = frozenset(self.index[r[1:]] for r in roles if r.startswith("@") and r[1:] in self.index)
        wanted = frozenset(r[1:] for r in roles if r.startswith("#"))
        if not wanted or semantic not in ("AllOf", "AnyOf"):
            return Match(frozenset(), named)
        if semantic == "AllOf":
            return Match(frozenset(c for c, attrs in enumerate(self.classes) if wanted <= attrs), named)
        return Match(frozenset(c for c, attrs in enumerate(self.classes) if wanted & attrs), named)

    def contains(self, match: Match, index: int) -> bool:
        return self.class_of[index] in match.classes or index in match.named

    def class_mask(self, cls: int) -> int:
        if self._class_masks is None:
            self._class_masks = [mask_of(members, len(self.names)) for members in self.members]
        return self._class_masks[cls]

    def mask(self, match: Match) -> int:
        if match not in self._masks:
            mask = 0
            for cls in match.classes:
                mask |= self.class_mask(cls)
            for index in match.named:
                mask |= 1 << index
            self._masks[match] = mask
        return self._masks[match]

    def names_of(self, mask: int) -> list[str]:
        return [self.names[i] for i in bits(mask)]

    def position(self, name: str, kind: str) -> int:
        try:
            return self.index[name]
        except KeyError:
            raise KeyError(f"unknown {kind} {name!r}") from None


@dataclass
class CompiledPolicy:
    """One policy with its role lists resolved against the populations."""

    name: str
    kind: str
    type: str | None
    semantic: str
    roles: dict[str, list[str]]
    matches: dict[str, Match]
    _names: dict[str, list[str]] = field(default_factory=dict, repr=False)


class Analysis:
    """Access decisions of one network state.

    Args:
        network: a :class:`~harness.network.Network` or a network dict.
        posture: identity name -> posture data (a dict or
            :class:`~harness.posture.PostureState`); None leaves posture checks
            unevaluated, an identity missing from the mapping reported nothing.
    """

    def __init__(self, network: Network | dict, posture: Mapping[str, Any] | None = None):
        self.network = network if isinstance(network, Network) else Network.from_dict(network)
        ents = self.network.entities
        self.populations = {key: Population(ents.get(key, [])) for key in
                            ("identities", "services", "edgeRouters", "postureChecks")}
        self._ids, self._svcs = self.populations["identities"], self.populations["services"]
        self._routers, self._checks = self.populations["edgeRouters"], self.populations["postureChecks"]
        self.check_items = {item["name"]: item for item in ents.get("postureChecks", [])}
        self.posture_data = None if posture is None else {k: PostureState.coerce(v) for k, v in posture.items()}
        self.service_policies = ents.get("servicePolicies", [])
        self.router_policies = ents.get("edgeRouterPolicies", [])
        self.service_router_policies = ents.get("serviceEdgeRouterPolicies", [])
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
            states = {record["name"]: client.management.call("getIdentityPostureData", record["id"])
                      for record in client.management.iterate("listIdentities", page_size=500)
                      if record["name"] in wanted}
        return cls(network, posture=states)

    # -- indexes ----------------------------------------------------------------------
    def _compile(self, kind: str, policy: dict) -> CompiledPolicy:
        semantic = semantic_of(policy.get("semantic"))
        roles = {wire: list(policy.get(wire) or []) for wire in ROLE_LISTS[kind]}
        matches = {wire: self.populations[pop].match(roles[wire], semantic) for wire, pop in ROLE_LISTS[kind].items()}
        ptype = type_of(policy.get("type")) if kind == "servicePolicies" else None
        return CompiledPolicy(policy["name"], kind, ptype, semantic, roles, matches)

    def _build(self) -> None:
        self._access = {t: ([0] * len(self._ids.classes), {}) for t in TYPES}
        for policy in self.policies["servicePolicies"]:
            self._add(self._access[policy.type], policy.matches["identityRoles"],
                      self._svcs.mask(policy.matches["serviceRoles"]))
        self._identity_routers = ([0] * len(self._ids.classes), {})
        for policy in self.policies["edgeRouterPolicies"]:
            self._add(self._identity_routers, policy.matches["identityRoles"],
                      self._routers.mask(policy.matches["edgeRouterRoles"]))
        self._service_routers = ([0] * len(self._svcs.classes), {})
        for policy in self.policies["serviceEdgeRouterPolicies"]:
            self._add(self._service_routers, policy.matches["serviceRoles"],
                      self._routers.mask(policy.matches["edgeRouterRoles"]))
        self._reach_cache: dict[int, int] = {}
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
                self._router_groups = {mask: mask_of(members, len(self._svcs)) for mask, members in groups.items() if mask}
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

    def routers_of_identity(self, identity: str) -> list[str]:
        return sorted(self._routers.names_of(self.identity_router_mask(self._ids.position(identity, "identity"))))

    def routers_of_service(self, service: str) -> list[str]:
        return sorted(self._routers.names_of(self.service_router_mask(self._svcs.position(service, "service"))))

    def routers_for(self, identity: str, service: str) -> list[str]:
        """Edge routers both the identity may use and the service is served by."""
        i, s = self._pair(identity, service)
        return sorted(self._routers.names_of(self.identity_router_mask(i) & self.service_router_mask(s)))

    def advice(self, identity: str, service: str) -> dict:
        """The management policy advice, by names: access flags, router counts, common routers."""
        i, s = self._pair(identity, service)
        mine, theirs = self.identity_router_mask(i), self.service_router_mask(s)
        return {"isDialAllowed": self.can(identity, service, DIAL), "isBindAllowed": self.can(identity, service, BIND),
                "identityRouterCount": mine.bit_count(), "serviceRouterCount": theirs.bit_count(),
                "commonRouters": sorted(self._routers.names_of(mine & theirs))}

    def posture_state(self, identity: str) -> PostureState | None:
        if self.posture_data is None:
            return None
        return self.posture_data.get(identity) or PostureState()

    def policy_named(self, kind: str, name: str) -> CompiledPolicy:
        return self._policy_names[kind][name]

    def policy_posture(self, policy: CompiledPolicy) -> list[str]:
        """Names of the posture checks a service policy requires."""
        if "checks" not in policy._names:
            policy._names["checks"] = sorted(self._checks.names_of(self._checks.mask(policy.matches["postureCheckRoles"])))
        return policy._names["checks"]

    def linking(self, identity: str, service: str, type: str = DIAL) -> list[CompiledPolicy]:
        """The service policies of ``type`` that match both the identity and the service."""
        i, s = self._pair(identity, service)
        return [p for p in self.policies["servicePolicies"] if p.type == type_of(type)
                and self._ids.contains(p.matches["identityRoles"], i) and self._svcs.contains(p.matches["serviceRoles"], s)]

    def posture_ok(self, identity: str, service: str, type: str = DIAL) -> bool | None:
        """Whether some linking policy has all its posture checks passing (None: cannot tell)."""
        state, verdicts = self.posture_state(identity), []
        for policy in self.linking(identity, service, type):
            results = [evaluate(self.check_items[name], state).passing for name in self.policy_posture(policy)]
            verdicts.append(False if False in results else None if None in results else True)
        if not verdicts or True in verdicts:
            return True
        return None if None in verdicts else False

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
        i, attrs = self._ids.position(identity, "identity"), frozenset(attrs)
        out = {t: 0 for t in TYPES}
        for policy in self.policies["servicePolicies"]:
            if _selects(policy, "identityRoles", i, attrs):
                out[policy.type] |= self._svcs.mask(policy.matches["serviceRoles"])
        return out

    def holders(self, service: str, type: str) -> int:
        """Identities (as a mask) that may ``type`` ``service`` now."""
        s, ptype = self._svcs.position(service, "service"), type_of(type)
        by_class, by_named = self._access[ptype]
        mask = 0
        for cls, services in enumerate(by_class):
            if services >> s & 1:
                mask |= self._ids.class_mask(cls)
        for index, services in by_named.items():
            if services >> s & 1:
                mask |= 1 << index
        return mask

    def holders_if(self, service: str, attrs: Iterable[str]) -> dict[str, int]:
        """Identities (masks by type) that would reach ``service`` if it had exactly ``attrs``."""
        s, attrs = self._svcs.position(service, "service"), frozenset(attrs)
        out = {t: 0 for t in TYPES}
        for policy in self.policies["servicePolicies"]:
            if _selects(policy, "serviceRoles", s, attrs):
                out[policy.type] |= self._ids.mask(policy.matches["identityRoles"])
        return out

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
            checks.append(PolicyCheck(
                policy.name, ptype, judge(policy.roles["identityRoles"], policy.semantic, identity, id_attrs),
                judge(policy.roles["serviceRoles"], policy.semantic, service, svc_attrs), list(names),
                [evaluate(self.check_items[name], state) for name in names]))
        checks.sort(key=lambda c: (not c.grants, c.policy))
        id_routers = self._linking_routers("edgeRouterPolicies", "identityRoles", self._ids, i)
        svc_routers = self._linking_routers("serviceEdgeRouterPolicies", "serviceRoles", self._svcs, s)
        ex = Explanation(identity, service, ptype, any(c.grants for c in checks), checks, id_routers, svc_routers,
                         sorted(set(id_routers) & set(svc_routers)),
                         sorted({n for c in checks if c.grants for n in c.posture_checks}), "")
        ex.other_types = [t for t in self.permissions(identity, service) if t != ptype]
        ex.posture_known = state is not None
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
    roles = policy.roles[wire]
    if ALL_ROLE in roles:
        return True
    wanted = {r[1:] for r in roles if r.startswith("#")}
    if not wanted:
        return False
    if policy.semantic == "AllOf":
        return wanted <= attrs
    return policy.semantic == "AnyOf" and bool(wanted & attrs)


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


class AccessMatrix(Mapping):
    """Identity x service access of one analysis, computed from masks on demand."""

    def __init__(self, analysis: Analysis, identities: list[str], services: list[str]):
        self.analysis, self.identities, self.services = analysis, identities, services
        ids, svcs = analysis._ids, analysis._svcs
        self._columns = [svcs.position(name, "service") for name in services]
        keep = mask_of(self._columns, len(svcs))
        self._rows = [(analysis.services_mask(i, DIAL) & keep, analysis.services_mask(i, BIND) & keep)
                      for i in (ids.position(name, "identity") for name in identities)]
        self._column_of = {s: n for n, s in enumerate(self._columns)}

    def __getitem__(self, key: tuple[str, str]) -> dict:
        identity, service = key
        if identity not in self.identities or service not in self.services:
            raise KeyError(key)
        dial, bind = self.analysis.can(identity, service, DIAL), self.analysis.can(identity, service, BIND)
        if not (dial or bind):
            raise KeyError(key)
        return {"dial": dial, "bind": bind, "routers": self.analysis.routers_for(identity, service)}

    def __iter__(self) -> Iterator[tuple[str, str]]:
        names = self.analysis._svcs.names
        for identity, (dial, bind) in zip(self.identities, self._rows):
            for s in bits(dial | bind):
                yield identity, names[s]

    def __len__(self) -> int:
        return sum((dial | bind).bit_count() for dial, bind in self._rows)

    def _usable(self, row: int) -> int:
        analysis = self.analysis
        identity = analysis._ids.index[self.identities[row]]
        return analysis.usable_mask(identity)

    def counts(self) -> dict[str, int]:
        """Pairs with dial, bind, either, and either plus a shared edge router."""
        out = {"identities": len(self.identities), "services": len(self.services), "dial": 0, "bind": 0, "any": 0, "usable": 0}
        for row, (dial, bind) in enumerate(self._rows):
            out["dial"] += dial.bit_count()
            out["bind"] += bind.bit_count()
            out["any"] += (dial | bind).bit_count()
            out["usable"] += ((dial | bind) & self._usable(row)).bit_count()
        return out

    def rows(self) -> list[dict]:
        """Every pair with access as a plain dict (identity, service, dial, bind, routers)."""
        return [{"identity": i, "service": s, **self[i, s]} for i, s in self]

    def codes(self):
        """A numpy array (identities x services): 1 dial, 2 bind, 3 both, plus 4 when an edge router is shared."""
        import numpy as np

        size, columns = len(self.analysis._svcs), np.asarray(self._columns, dtype=np.intp)
        cache: dict[int, Any] = {}

        def unpack(mask: int):
            if mask not in cache:
                raw = np.frombuffer(mask.to_bytes((size + 7) // 8 or 1, "little"), dtype=np.uint8)
                cache[mask] = np.unpackbits(raw, bitorder="little")[:size][columns].astype(np.int8)
            return cache[mask]

        out = np.zeros((len(self.identities), len(self.services)), dtype=np.int8)
        for row, (dial, bind) in enumerate(self._rows):
            if dial | bind:
                out[row] = unpack(dial) + 2 * unpack(bind) + 4 * unpack((dial | bind) & self._usable(row))
        return out

    def frame(self, with_routers: bool = False):
        """A pandas DataFrame: identity rows, service columns, "D", "B", "DB" or ""."""
        import numpy as np

        pd = pandas()
        marks = np.array(["", "d", "b", "db", "", "D", "B", "DB"] if with_routers else ["", "D", "B", "DB"] * 2, dtype=object)
        return pd.DataFrame(marks[self.codes()], index=pd.Index(self.identities, name="identity"),
                            columns=pd.Index(self.services, name="service"))

    def long_frame(self):
        """A pandas DataFrame with one row per pair with access."""
        pd = pandas()
        rows = [{**row, "routers": len(row["routers"])} for row in self.rows()]
        return pd.DataFrame(rows, columns=["identity", "service", "dial", "bind", "routers"])


@dataclass
class AccessDiff:
    """Who gains and loses which access between two network states."""

    gained: list[tuple[str, str, str]]  # (identity, service, type)
    lost: list[tuple[str, str, str]]
    connected: list[tuple[str, str]] = field(default_factory=list)  # now allowed and sharing an edge router
    disconnected: list[tuple[str, str]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.gained or self.lost or self.connected or self.disconnected)

    def rows(self) -> list[dict]:
        out = [{"identity": i, "service": s, "type": t, "change": "gained"} for i, s, t in self.gained]
        out += [{"identity": i, "service": s, "type": t, "change": "lost"} for i, s, t in self.lost]
        out += [{"identity": i, "service": s, "type": "usable", "change": "gained"} for i, s in self.connected]
        out += [{"identity": i, "service": s, "type": "usable", "change": "lost"} for i, s in self.disconnected]
        return out

    def lines(self) -> list[str]:
        if not self:
            return ["no change in access"]
        out = [f"+ {i} may {t.lower()} {s}" for i, s, t in self.gained]
        out += [f"- {i} may no longer {t.lower()} {s}" for i, s, t in self.lost]
        out += [f"+ {i} can now reach {s} over an edge router" for i, s in self.connected]
        out += [f"- {i} can no longer reach {s} over an edge router" for i, s in self.disconnected]
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def frame(self):
        return pandas().DataFrame(self.rows(), columns=["identity", "service", "type", "change"])


def access_diff(before: Analysis, after: Analysis) -> AccessDiff:
    """Who gains and loses which access between two network states."""
    gained, lost, connected, disconnected = [], [], [], []
    same_services = before._svcs.names == after._svcs.names
    for identity in sorted(set(before._ids.names) | set(after._ids.names)):
        old_i, new_i = before._ids.index.get(identity), after._ids.index.get(identity)
        pairs = [(before.services_mask(old_i, t) if old_i is not None else 0,
                  after.services_mask(new_i, t) if new_i is not None else 0, t) for t in TYPES]
        pairs.append((before.usable_mask(old_i) if old_i is not None else 0,
                      after.usable_mask(new_i) if new_i is not None else 0, None))
        for old, new, ptype in pairs:
            if same_services and old == new:
                continue
            old_names, new_names = set(before._svcs.names_of(old)), set(after._svcs.names_of(new))
            if ptype is None:
                connected += [(identity, s) for s in sorted(new_names - old_names)]
                disconnected += [(identity, s) for s in sorted(old_names - new_names)]
            else:
                gained += [(identity, s, ptype) for s in sorted(new_names - old_names)]
                lost += [(identity, s, ptype) for s in sorted(old_names - new_names)]
    return AccessDiff(sorted(gained), sorted(lost), connected, disconnected)


__all__ = ["AccessDiff", "AccessMatrix", "Analysis", "Explanation", "PolicyCheck", "RoleCheck", "access_diff",
           "apply_change", "judge", "DIAL", "BIND"]
