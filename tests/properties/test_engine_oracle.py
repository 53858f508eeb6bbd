"""The policy engine agrees with a brute-force oracle on random networks and edits.

The oracle evaluates every role list of every policy against every entity with
``roles.matches`` after each step; it shares nothing with the engine's indexes.
Run more examples with ``ENGINE_EXAMPLES=5000 pytest tests/properties/test_engine_oracle.py``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from controller.policy.engine import PolicyEngine
from controller.policy.roles import matches
from controller.policy.verify import problems
from tests.sizes import size

EXAMPLES = int(os.environ.get("ENGINE_EXAMPLES", size(100, 30)))
# ENGINE_SHRINK=0 reports the first failure as found (shrinking long sequences is slow).
PHASES = [p for p in Phase if p is not Phase.shrink or os.environ.get("ENGINE_SHRINK", "1") != "0"]
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, phases=PHASES, suppress_health_check=[HealthCheck.too_slow])

# Entity ids are shared across kinds on purpose (a router's identity has the router's id).
# A small universe makes collisions (same pair via two policies, @id and #attr at once) common.
IDS = ["n0", "n1", "n2"]
ATTRS = ["a", "b", "all"]
KINDS = ["identities", "services", "edgeRouters", "postureChecks"]
LISTS = {
    "servicePolicies": ("identities", "services", "postureChecks"),
    "edgeRouterPolicies": ("identities", "edgeRouters"),
    "serviceEdgeRouterPolicies": ("services", "edgeRouters"),
}
POLICY_IDS = {
    "servicePolicies": ["sp0", "sp1"],
    "edgeRouterPolicies": ["erp0", "erp1"],
    "serviceEdgeRouterPolicies": ["serp0", "serp1"],
}
UPSERT = {
    "identities": "upsert_identity",
    "services": "upsert_service",
    "edgeRouters": "upsert_edge_router",
    "postureChecks": "upsert_posture_check",
}
REMOVE = {kind: name.replace("upsert_", "remove_") for kind, name in UPSERT.items()}


# -- strategies --------------------------------------------------------------------------
def role_entries():
    return st.one_of(st.sampled_from(ATTRS).map(lambda a: "#" + a), st.sampled_from(IDS).map(lambda i: "@" + i))


def role_lists(max_size: int = 3):
    return st.one_of(st.just(["#all"]), st.lists(role_entries(), max_size=max_size, unique=True))


def semantics():
    return st.sampled_from(["AllOf", "AnyOf", "anyof", "ALLOF"])


def attribute_lists():
    return st.lists(st.sampled_from(ATTRS), max_size=2, unique=True)


def entity_upserts(kind=None):
    kinds = st.just(kind) if kind else st.sampled_from(KINDS)
    return st.tuples(st.just("upsert"), kinds, st.sampled_from(IDS), attribute_lists())


def policy_upserts(pkind=None, pid=None):
    def build(pkind):
        lists = st.fixed_dictionaries({kind: role_lists() for kind in LISTS[pkind]})
        ptype = st.sampled_from(["Dial", "Bind"]) if pkind == "servicePolicies" else st.none()
        ids = st.just(pid) if pid else st.sampled_from(POLICY_IDS[pkind])
        return st.tuples(st.just("policy"), st.just(pkind), ids, ptype, semantics(), lists)

    return build(pkind) if pkind else st.one_of(*[build(p) for p in LISTS])


def networks():
    """A populated network: most entities and policies exist, as ops creating them."""
    entities = [
        st.one_of(entity_upserts(kind).map(lambda op, i=entity_id: op[:2] + (i,) + op[3:]), st.none())
        for kind in KINDS
        for entity_id in IDS
    ]
    policies = [st.one_of(policy_upserts(pkind, pid), st.none()) for pkind, ids in POLICY_IDS.items() for pid in ids]
    return st.tuples(*entities, *policies).flatmap(lambda ops: st.permutations([op for op in ops if op is not None]))


def changes():
    """Random changes: upserts and removes of every kind plus small edits."""
    remove = st.tuples(st.just("remove"), st.sampled_from(KINDS), st.sampled_from(IDS))
    toggle_attr = st.tuples(st.just("attr"), st.sampled_from(KINDS), st.sampled_from(IDS), st.sampled_from(ATTRS))
    pids = st.sampled_from([(pkind, pid) for pkind, ids in POLICY_IDS.items() for pid in ids])
    lists = st.sampled_from(
        [(pkind, pid, kind) for pkind, ids in POLICY_IDS.items() for pid in ids for kind in LISTS[pkind]]
    )
    return st.one_of(
        entity_upserts(),
        remove,
        toggle_attr,
        policy_upserts(),
        pids.map(lambda kp: ("unpolicy",) + kp),
        st.tuples(lists, role_lists()).map(lambda t: ("edit",) + t[0] + (t[1],)),
        st.tuples(lists, role_entries()).map(lambda t: ("toggle",) + t[0] + (t[1],)),
        st.tuples(pids, semantics()).map(lambda t: ("semantic",) + t[0] + (t[1],)),
        st.tuples(st.sampled_from(POLICY_IDS["servicePolicies"]), st.sampled_from(["Dial", "Bind"])).map(
            lambda t: ("retype",) + t
        ),
    )


def toggled(roles, entry):
    """A role list with one entry added or removed, keeping ``#all`` alone."""
    if entry in roles:
        return [r for r in roles if r != entry]
    if entry == "#all" or "#all" in roles:
        return [entry]
    return roles + [entry]


def concretize(op, oracle):
    """Turn an edit into a plain upsert from the oracle's state (None: nothing to edit)."""
    if op[0] == "attr":
        attrs = oracle.entities[op[1]].get(op[2])
        return None if attrs is None else ("upsert", op[1], op[2], sorted(attrs ^ {op[3]}))
    if op[0] not in ("edit", "toggle", "semantic", "retype"):
        return op
    pkind, pid = ("servicePolicies", op[1]) if op[0] == "retype" else op[1:3]
    current = oracle.policies[pkind].get(pid)
    if current is None:
        return None
    ptype, semantic, lists = current["type"], current["semantic"], dict(current["lists"])
    if op[0] == "edit":
        lists[op[3]] = op[4]
    elif op[0] == "toggle":
        lists[op[3]] = toggled(lists[op[3]], op[4])
    elif op[0] == "semantic":
        semantic = op[3]
    else:
        ptype = op[2]
    return ("policy", pkind, pid, ptype, semantic, lists)


# -- oracle ------------------------------------------------------------------------------
class Oracle:
    """Entities and policies as plain data; every answer recomputed from the rules."""

    def __init__(self):
        self.entities: dict[str, dict[str, set[str]]] = {kind: {} for kind in KINDS}
        self.policies: dict[str, dict[str, dict]] = {pkind: {} for pkind in LISTS}

    def apply(self, op):
        if op[0] == "upsert":
            self.entities[op[1]][op[2]] = set(op[3])
        elif op[0] == "remove":
            self.entities[op[1]].pop(op[2], None)
        elif op[0] == "policy":
            _, pkind, pid, ptype, semantic, lists = op
            self.policies[pkind][pid] = {"type": ptype, "semantic": semantic, "lists": lists}
        else:
            self.policies[op[1]].pop(op[2], None)

    def members(self, pkind, pid, kind):
        policy = self.policies[pkind][pid]
        roles = policy["lists"][kind]
        return {e for e, attrs in self.entities[kind].items() if matches(policy["semantic"], roles, e, attrs)}

    def pairs(self, pkind, a_kind, b_kind, ptype=None):
        result = set()
        for pid, policy in self.policies[pkind].items():
            if ptype is None or policy["type"] == ptype:
                for a in self.members(pkind, pid, a_kind):
                    result |= {(a, b) for b in self.members(pkind, pid, b_kind)}
        return result

    def access(self, ptype):
        return self.pairs("servicePolicies", "identities", "services", ptype)

    def policies_of(self, kind, entity_id, pkind):
        if entity_id not in self.entities[kind] or kind not in LISTS[pkind]:
            return set()
        return {pid for pid in self.policies[pkind] if entity_id in self.members(pkind, pid, kind)}

    def linking(self, identity_id, service_id, ptype=None):
        both = self.policies_of("identities", identity_id, "servicePolicies")
        both &= self.policies_of("services", service_id, "servicePolicies")
        return sorted(p for p in both if ptype is None or self.policies["servicePolicies"][p]["type"] == ptype)

    def signature(self, identity_id, dial, bind, id_routers, svc_routers):
        """What an identity may observe: services, routers and posture requirements."""
        services = {s for i, s in dial | bind if i == identity_id}
        routers = {r for i, r in id_routers if i == identity_id}
        posture = {
            s: tuple(
                (
                    p,
                    self.policies["servicePolicies"][p]["type"],
                    tuple(sorted(self.members("servicePolicies", p, "postureChecks"))),
                )
                for p in self.linking(identity_id, s)
            )
            for s in services
        }
        usable = {s: routers & {r for t, r in svc_routers if t == s} for s in services}
        return (
            {s for i, s in dial if i == identity_id},
            {s for i, s in bind if i == identity_id},
            routers,
            posture,
            usable,
        )

    def signatures(self):
        dial, bind = self.access("Dial"), self.access("Bind")
        id_routers = self.pairs("edgeRouterPolicies", "identities", "edgeRouters")
        svc_routers = self.pairs("serviceEdgeRouterPolicies", "services", "edgeRouters")
        return {i: self.signature(i, dial, bind, id_routers, svc_routers) for i in self.entities["identities"]}


def apply_to_engine(engine: PolicyEngine, op):
    if op[0] == "upsert":
        getattr(engine, UPSERT[op[1]])(op[2], op[3])
    elif op[0] == "remove":
        getattr(engine, REMOVE[op[1]])(op[2])
    elif op[0] == "policy":
        _, pkind, pid, ptype, semantic, lists = op
        if pkind == "servicePolicies":
            engine.upsert_service_policy(
                pid, ptype, semantic, lists["identities"], lists["services"], lists["postureChecks"]
            )
        elif pkind == "edgeRouterPolicies":
            engine.upsert_edge_router_policy(pid, semantic, lists["identities"], lists["edgeRouters"])
        else:
            engine.upsert_service_edge_router_policy(pid, semantic, lists["services"], lists["edgeRouters"])
    else:
        method = {
            "servicePolicies": "remove_service_policy",
            "edgeRouterPolicies": "remove_edge_router_policy",
            "serviceEdgeRouterPolicies": "remove_service_edge_router_policy",
        }[op[1]]
        getattr(engine, method)(op[2])


# -- comparison --------------------------------------------------------------------------
def check_access(engine: PolicyEngine, oracle: Oracle):
    dial, bind = oracle.access("Dial"), oracle.access("Bind")
    for ptype, pairs in (("Dial", dial), ("Bind", bind), (None, dial | bind)):
        for i in IDS:
            assert engine.services_for_identity(i, ptype) == {s for a, s in pairs if a == i}, (i, ptype)
            assert engine.identities_for_service(i, ptype) == {a for a, s in pairs if s == i}, (i, ptype)
    for i in IDS:
        for s in IDS:
            expected = [t for t, pairs in (("Bind", bind), ("Dial", dial)) if (i, s) in pairs]
            assert engine.permissions(i, s) == expected, (i, s)
            for ptype in (None, "Dial", "Bind"):
                assert engine.service_policies_linking(i, s, ptype) == oracle.linking(i, s, ptype)


def check_routers(engine: PolicyEngine, oracle: Oracle):
    id_routers = oracle.pairs("edgeRouterPolicies", "identities", "edgeRouters")
    svc_routers = oracle.pairs("serviceEdgeRouterPolicies", "services", "edgeRouters")
    for n in IDS:
        assert engine.edge_routers_for_identity(n) == {r for i, r in id_routers if i == n}
        assert engine.identities_for_edge_router(n) == {i for i, r in id_routers if r == n}
        assert engine.edge_routers_for_service(n) == {r for s, r in svc_routers if s == n}
        assert engine.services_for_edge_router(n) == {s for s, r in svc_routers if r == n}
    for i in IDS:
        for s in IDS:
            usable = {r for a, r in id_routers if a == i} & {r for t, r in svc_routers if t == s}
            assert engine.usable_edge_routers(i, s) == usable, (i, s)
            advice = engine.advice(i, s)
            assert advice["commonRouterIds"] == sorted(usable)
            assert advice["identityRouterCount"] == len({r for a, r in id_routers if a == i})


def check_policies(engine: PolicyEngine, oracle: Oracle):
    for pkind, lists in LISTS.items():
        for pid in POLICY_IDS[pkind]:
            for kind in lists:
                expected = oracle.members(pkind, pid, kind) if pid in oracle.policies[pkind] else set()
                assert engine.policy_members(pid, kind) == expected, (pkind, pid, kind)
            if pkind == "servicePolicies":
                expected = oracle.members(pkind, pid, "postureChecks") if pid in oracle.policies[pkind] else set()
                assert engine.posture_checks_of_policy(pid) == expected
        for kind in lists:
            for n in IDS:
                assert engine.policies_of(kind, n, pkind) == oracle.policies_of(kind, n, pkind), (kind, n, pkind)


def check_attributes(engine: PolicyEngine, oracle: Oracle):
    for kind in KINDS:
        entities = oracle.entities[kind]
        assert engine.attributes(kind) == sorted(set().union(*entities.values()))
        for attr in ATTRS:
            assert engine.with_attribute(kind, attr) == {e for e, attrs in entities.items() if attr in attrs}
        for semantic in ("AllOf", "AnyOf"):
            for roles in (["#a", "#b"], ["#all"], ["@n0", "#b"], ["@n1"], ["#x"], []):
                wanted = [r[1:] for r in roles if r.startswith("#")]
                expected = {
                    e
                    for e, attrs in entities.items()
                    if "@" + e in roles
                    or (
                        wanted
                        and (
                            all(w in attrs for w in wanted) if semantic == "AllOf" else any(w in attrs for w in wanted)
                        )
                    )
                }
                assert engine.role_filter(kind, roles, semantic) == expected, (kind, roles, semantic)


def check_all(engine: PolicyEngine, oracle: Oracle):
    check_access(engine, oracle)
    check_routers(engine, oracle)
    check_policies(engine, oracle)
    check_attributes(engine, oracle)


class Harness:
    """An engine, its oracle and the listener's reports, stepped together."""

    def __init__(self):
        self.engine, self.oracle, self.reported = PolicyEngine(), Oracle(), set()
        self.engine.add_listener(self.reported.update)

    def step(self, op):
        op = concretize(op, self.oracle)
        if op is None:
            return
        before = self.oracle.signatures()
        self.reported.clear()
        apply_to_engine(self.engine, op)
        self.oracle.apply(op)
        after = self.oracle.signatures()
        empty = (set(), set(), set(), {}, {})
        changed = {i for i in before.keys() | after.keys() if before.get(i, empty) != after.get(i, empty)}
        assert changed <= self.reported, (op, changed - self.reported)
        assert not problems(self.engine), (op, problems(self.engine))


@SETTINGS
@given(networks(), st.lists(changes(), max_size=20))
def test_engine_matches_oracle_after_every_step(network, steps):
    harness = Harness()
    for op in network + steps:
        harness.step(op)
        check_all(harness.engine, harness.oracle)


@SETTINGS
@given(networks(), st.lists(changes(), max_size=30))
def test_replaying_the_final_state_gives_the_same_answers(network, steps):
    """An engine rebuilt from the final state (as on start) equals the incremental one."""
    harness = Harness()
    for op in network + steps:
        harness.step(op)
    rebuilt = PolicyEngine()
    for pkind, policies in harness.oracle.policies.items():
        for pid, policy in policies.items():
            apply_to_engine(rebuilt, ("policy", pkind, pid, policy["type"], policy["semantic"], policy["lists"]))
    for kind, entities in harness.oracle.entities.items():
        for entity_id, attrs in entities.items():
            apply_to_engine(rebuilt, ("upsert", kind, entity_id, sorted(attrs)))
    check_all(rebuilt, harness.oracle)


class EngineMachine(RuleBasedStateMachine):
    """Stateful exploration of the same changes, checked after every rule."""

    def __init__(self):
        super().__init__()
        self.harness = Harness()

    @initialize(network=networks())
    def build_network(self, network):
        for op in network:
            self.harness.step(op)

    @rule(op=changes())
    def change(self, op):
        self.harness.step(op)

    @invariant()
    def agrees_with_oracle(self):
        check_all(self.harness.engine, self.harness.oracle)


EngineMachine.TestCase.settings = settings(
    max_examples=max(10, EXAMPLES // 2),
    stateful_step_count=20,
    deadline=None,
    phases=PHASES,
    suppress_health_check=[HealthCheck.too_slow],
)
TestEngineMachine = EngineMachine.TestCase
