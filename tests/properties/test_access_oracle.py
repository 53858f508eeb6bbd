"""Access decisions over the HTTP API agree with a brute-force oracle on random networks and edits.

Hypothesis builds a small network through the management API (identities with
passwords, services, edge routers, domain posture checks, the three policy kinds),
logs every identity in on the client API, then checks after the build and after
each random edit:

* client ``GET /services``: exactly the dialable/bindable services, with permissions;
* ``POST /sessions`` for every (identity, service, type): the outcome of the real
  checks in the real order (404, 400 permission, 409 posture, 400 no routers, 201);
* management policy advice for every (identity, service).

The oracle applies the rules of model-semantics sections 2-4 directly, with
``controller.policy.roles.matches`` as its only import from the controller.
Run more examples with ``ORACLE_EXAMPLES=2000 pytest tests/properties/test_access_oracle.py``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from controller.app import create_app
from controller.clock import FrozenClock
from controller.policy.roles import matches
from harness.client import ZitiClient
from harness.client.transport import inprocess
from tests.sizes import size

EXAMPLES = int(os.environ.get("ORACLE_EXAMPLES", size(25, 10)))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
ATTRS = ["a", "b", "c"]
DOMAINS = ["d0", "d1"]
KINDS = {"identities": 3, "services": 3, "routers": 2, "checks": 2}
LISTS = {
    "service-policies": (
        ("identityRoles", "identities"),
        ("serviceRoles", "services"),
        ("postureCheckRoles", "checks"),
    ),
    "edge-router-policies": (("identityRoles", "identities"), ("edgeRouterRoles", "routers")),
    "service-edge-router-policies": (("serviceRoles", "services"), ("edgeRouterRoles", "routers")),
}


# -- strategies ----------------------------------------------------------------------------
def attribute_sets():
    return st.lists(st.sampled_from(ATTRS), max_size=2, unique=True)


def role_lists(kind: str):
    """Symbolic role lists: ``#attr``, ``#all`` alone, or ``("@", index)`` resolved after creation."""
    entry = st.one_of(
        st.sampled_from(ATTRS).map(lambda a: "#" + a), st.integers(0, KINDS[kind] - 1).map(lambda i: ("@", i))
    )
    return st.one_of(st.just(["#all"]), st.lists(entry, max_size=3, unique=True))


def policies(collection: str):
    lists = st.fixed_dictionaries({wire: role_lists(kind) for wire, kind in LISTS[collection]})
    extra = (
        st.fixed_dictionaries({"type": st.sampled_from(["Dial", "Bind"])})
        if collection == "service-policies"
        else st.just({})
    )
    return st.tuples(st.just(collection), st.sampled_from(["AllOf", "AnyOf"]), lists, extra)


def networks():
    return st.fixed_dictionaries(
        {
            "identities": st.lists(attribute_sets(), min_size=KINDS["identities"], max_size=KINDS["identities"]),
            "services": st.lists(attribute_sets(), min_size=KINDS["services"], max_size=KINDS["services"]),
            "routers": st.lists(attribute_sets(), min_size=KINDS["routers"], max_size=KINDS["routers"]),
            "checks": st.lists(
                st.tuples(attribute_sets(), st.sampled_from(DOMAINS)), min_size=0, max_size=KINDS["checks"]
            ),
            "domains": st.lists(
                st.sampled_from([None, *DOMAINS]), min_size=KINDS["identities"], max_size=KINDS["identities"]
            ),
            "policies": st.lists(st.one_of(*(policies(c) for c in LISTS)), min_size=1, max_size=7),
        }
    )


def edits():
    entity = st.tuples(
        st.just("attrs"), st.sampled_from(["identities", "services", "routers"]), st.integers(0, 2), attribute_sets()
    )
    policy = st.tuples(st.just("policy"), st.integers(0, 6), st.integers(0, 2), st.data())
    return st.one_of(
        entity,
        policy,
        st.tuples(st.just("unpolicy"), st.integers(0, 6)),
        st.tuples(st.just("domain"), st.integers(0, 2), st.sampled_from(DOMAINS)),
        st.tuples(st.just("unservice"), st.integers(0, 2)),
    )


# -- the oracle ----------------------------------------------------------------------------
@dataclass
class Oracle:
    attrs: dict = field(default_factory=dict)  # kind -> {id: attrs}
    check_domains: dict = field(default_factory=dict)  # check id -> domain it requires
    domains: dict = field(default_factory=dict)  # identity id -> reported domain
    policies: dict = field(default_factory=dict)  # policy id -> (collection, semantic, {wire: roles}, type)

    def members(self, policy_id: str, wire: str, kind: str) -> set[str]:
        _, semantic, lists, _ = self.policies[policy_id]
        return {e for e, attrs in self.attrs[kind].items() if matches(semantic, lists.get(wire, []), e, attrs)}

    def of(self, collection: str):
        return [pid for pid, p in self.policies.items() if p[0] == collection]

    def linking(self, identity: str, service: str, ptype: str) -> list[str]:
        return [
            pid
            for pid in self.of("service-policies")
            if self.policies[pid][3] == ptype
            and identity in self.members(pid, "identityRoles", "identities")
            and service in self.members(pid, "serviceRoles", "services")
        ]

    def permissions(self, identity: str, service: str) -> list[str]:
        return [t for t in ("Bind", "Dial") if self.linking(identity, service, t)]

    def routers_of(self, collection: str, wire: str, kind: str, entity: str) -> set[str]:
        out = set()
        for pid in self.of(collection):
            if entity in self.members(pid, wire, kind):
                out |= self.members(pid, "edgeRouterRoles", "routers")
        return out

    def posture_passes(self, identity: str, service: str, ptype: str) -> bool:
        reported = self.domains.get(identity)
        return any(
            all(self.check_domains[c] == reported for c in self.members(pid, "postureCheckRoles", "checks"))
            for pid in self.linking(identity, service, ptype)
        )

    def session_outcome(self, identity: str, service: str, ptype: str) -> tuple[int, str | None]:
        permissions = self.permissions(identity, service)
        if not permissions:
            return 404, "NOT_FOUND"
        if ptype not in permissions:
            return 400, "COULD_NOT_VALIDATE"
        if not self.posture_passes(identity, service, ptype):
            return 409, "INVALID_POSTURE"
        mine = self.routers_of("edge-router-policies", "identityRoles", "identities", identity)
        theirs = self.routers_of("service-edge-router-policies", "serviceRoles", "services", service)
        if not mine & theirs:
            return 400, "NO_EDGE_ROUTERS_AVAILABLE"
        return 201, None


# -- building and checking through the API ---------------------------------------------------
class World:
    def __init__(self):
        self.app = create_app(clock=FrozenClock("2025-06-01T12:00:00Z"))
        self.http = inprocess(self.app)
        self.api = ZitiClient(self.http)
        self.admin = self.api.signed_in("admin", "admin")
        self.oracle = Oracle()
        self.ids: dict[str, list[str]] = {}
        self.clients: dict[str, ZitiClient] = {}
        self.policy_ids: list[str] = []

    def close(self):
        self.http.close()
        self.app.controller.close()

    def build(self, net: dict) -> None:
        admin, oracle = self.admin, self.oracle
        self.ids["identities"] = [
            admin.create("identities", {"name": f"i{n}", "type": "User", "isAdmin": False, "roleAttributes": attrs})
            for n, attrs in enumerate(net["identities"])
        ]
        self.ids["services"] = [
            admin.create("services", {"name": f"s{n}", "encryptionRequired": True, "roleAttributes": attrs})
            for n, attrs in enumerate(net["services"])
        ]
        self.ids["routers"] = [
            admin.create("edge-routers", {"name": f"r{n}", "roleAttributes": attrs})
            for n, attrs in enumerate(net["routers"])
        ]
        self.ids["checks"] = [
            admin.create(
                "posture-checks", {"name": f"c{n}", "typeId": "DOMAIN", "domains": [domain], "roleAttributes": attrs}
            )
            for n, (attrs, domain) in enumerate(net["checks"])
        ]
        for kind in ("identities", "services", "routers"):
            oracle.attrs[kind] = dict(zip(self.ids[kind], net[kind]))
        oracle.attrs["checks"] = {cid: attrs for cid, (attrs, _) in zip(self.ids["checks"], net["checks"])}
        oracle.check_domains = {cid: domain for cid, (_, domain) in zip(self.ids["checks"], net["checks"])}
        for n, identity_id in enumerate(self.ids["identities"]):
            admin.create(
                "authenticators",
                {"identityId": identity_id, "method": "updb", "username": f"user{n}", "password": "pass-word"},
            )
            self.clients[identity_id] = self.api.signed_in(f"user{n}", "pass-word", api="client")
        for identity_id, domain in zip(self.ids["identities"], net["domains"]):
            if domain is not None:
                self.report_domain(identity_id, domain)
        for collection, semantic, lists, extra in net["policies"]:
            self.create_policy(collection, semantic, lists, extra)

    def resolve(self, kind: str, roles) -> list[str]:
        ids = self.ids.get(kind, [])
        out = []
        for role in roles:
            if isinstance(role, tuple):
                if role[1] < len(ids):
                    out.append("@" + ids[role[1]])
            else:
                out.append(role)
        return out

    def create_policy(self, collection: str, semantic: str, lists: dict, extra: dict) -> None:
        wires = dict(LISTS[collection])
        resolved = {wire: self.resolve(wires[wire], roles) for wire, roles in lists.items()}
        resolved = {
            wire: [r for r in roles if not r.startswith("@") or self.exists(wires[wire], r[1:])]
            for wire, roles in resolved.items()
        }
        policy_id = self.admin.create(
            collection, {"name": f"p{len(self.policy_ids)}", "semantic": semantic, **resolved, **extra}
        )
        self.policy_ids.append(policy_id)
        self.oracle.policies[policy_id] = (collection, semantic, resolved, extra.get("type"))

    def exists(self, kind: str, entity_id: str) -> bool:
        return entity_id in self.oracle.attrs[kind]

    def report_domain(self, identity_id: str, domain: str) -> None:
        check_id = self.ids["checks"][0] if self.ids["checks"] else "no-check"
        self.clients[identity_id].edge_ok(
            "POST", "/posture-response", json={"id": check_id, "typeId": "DOMAIN", "domain": domain}
        )
        self.oracle.domains[identity_id] = domain

    def apply(self, edit) -> None:
        admin, oracle = self.admin, self.oracle
        if edit[0] == "attrs":
            _, kind, index, attrs = edit
            entity_id = self.ids[kind][index % len(self.ids[kind])]
            if entity_id in oracle.attrs[kind]:
                path = {"identities": "identities", "services": "services", "routers": "edge-routers"}[kind]
                admin.mgmt_ok("PATCH", f"/{path}/{entity_id}", json={"roleAttributes": attrs})
                oracle.attrs[kind][entity_id] = attrs
        elif edit[0] == "policy":
            _, index, list_index, data = edit
            live = [p for p in self.policy_ids if p in oracle.policies]
            if live:
                policy_id = live[index % len(live)]
                collection, semantic, lists, ptype = oracle.policies[policy_id]
                wire, kind = LISTS[collection][list_index % len(LISTS[collection])]
                roles = [
                    r
                    for r in self.resolve(kind, data.draw(role_lists(kind)))
                    if not r.startswith("@") or self.exists(kind, r[1:])
                ]
                admin.mgmt_ok("PATCH", f"/{collection}/{policy_id}", json={wire: roles})
                oracle.policies[policy_id] = (collection, semantic, {**lists, wire: roles}, ptype)
        elif edit[0] == "unpolicy":
            live = [p for p in self.policy_ids if p in oracle.policies]
            if live:
                policy_id = live[edit[1] % len(live)]
                admin.mgmt_ok("DELETE", f"/{oracle.policies[policy_id][0]}/{policy_id}")
                del oracle.policies[policy_id]
        elif edit[0] == "domain":
            self.report_domain(self.ids["identities"][edit[1] % len(self.ids["identities"])], edit[2])
        elif edit[0] == "unservice":
            service_id = self.ids["services"][edit[1] % len(self.ids["services"])]
            if service_id in oracle.attrs["services"]:
                admin.mgmt_ok("DELETE", f"/services/{service_id}")
                del oracle.attrs["services"][service_id]
                for pid, (collection, semantic, lists, ptype) in oracle.policies.items():
                    oracle.policies[pid] = (
                        collection,
                        semantic,
                        {w: [r for r in roles if r != "@" + service_id] for w, roles in lists.items()},
                        ptype,
                    )

    def check(self) -> None:
        oracle, services = self.oracle, list(oracle_services(self.oracle))
        for identity_id, client in self.clients.items():
            listed = {s["id"]: s["permissions"] for s in client.edge_ok("GET", "/services", params={"limit": -1})}
            expected = {s: oracle.permissions(identity_id, s) for s in services if oracle.permissions(identity_id, s)}
            assert listed == expected, identity_id
            for service_id in services:
                self.check_advice(identity_id, service_id)
                for ptype in ("Dial", "Bind"):
                    response = client.edge("POST", "/sessions", json={"serviceId": service_id, "type": ptype})
                    code = response.json()["error"]["code"] if response.status_code >= 400 else None
                    event(f"session {response.status_code} {code}")
                    assert (response.status_code, code) == oracle.session_outcome(identity_id, service_id, ptype), (
                        identity_id,
                        service_id,
                        ptype,
                        response.text,
                    )

    def check_advice(self, identity_id: str, service_id: str) -> None:
        oracle = self.oracle
        advice = self.admin.mgmt_ok("GET", f"/identities/{identity_id}/policy-advice/{service_id}")
        mine = oracle.routers_of("edge-router-policies", "identityRoles", "identities", identity_id)
        theirs = oracle.routers_of("service-edge-router-policies", "serviceRoles", "services", service_id)
        permissions = oracle.permissions(identity_id, service_id)
        assert advice["isDialAllowed"] == ("Dial" in permissions) and advice["isBindAllowed"] == ("Bind" in permissions)
        assert advice["identityRouterCount"] == len(mine) and advice["serviceRouterCount"] == len(theirs)
        assert {r["id"] for r in advice["commonRouters"]} == mine & theirs


def oracle_services(oracle: Oracle):
    return sorted(oracle.attrs["services"])


@SETTINGS
@given(net=networks(), steps=st.lists(edits(), max_size=3))
def test_client_services_sessions_and_advice_match_the_oracle(net, steps):
    world = World()
    try:
        world.build(net)
        world.check()
        for edit in steps:
            world.apply(edit)
            world.check()
    finally:
        world.close()
