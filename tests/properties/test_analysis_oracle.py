"""The policy analysis agrees with the controller's actual answers on random networks.

Hypothesis draws a network (``harness.testing.strategies.networks``), adds domain posture
checks to some service policies and a reported domain to some identities, applies
it to an in-process controller, logs every identity in by password and reports its
domain. Then the analysis of the exported network (``Analysis.from_controller``)
must agree with:

* client ``GET /services`` of each identity: the services and their permissions;
* ``POST /sessions`` for every (identity, service, type): status, error code and the session's edge routers;
* management policy advice for every (identity, service): flags, router counts, common routers.

A second property needs no controller: the fix an explanation suggests, applied
with ``what_if``, flips the decision it explains.
Run more examples with ``ANALYSIS_EXAMPLES=500 pytest tests/properties/test_analysis_oracle.py``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from controller.app import create_app
from controller.clock import FrozenClock
from harness.analysis import Analysis
from harness.client import ZitiClient
from harness.network import apply
from harness.testing.strategies import networks, role_expressions
from tests.sizes import size

EXAMPLES = int(os.environ.get("ANALYSIS_EXAMPLES", size(20, 8)))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
PASSWORD = "pass-word-1"
ATTRIBUTES = st.sampled_from(["red", "green", "blue", "ops", "eu"])
DOMAINS = ["d0.example", "d1.example"]


@st.composite
def postured_networks(draw, max_size: int = 4) -> tuple[dict, dict]:
    """A network with domain posture checks on some service policies; and each identity's reported domain."""
    network = draw(networks(max_size=max_size))
    if draw(st.booleans()):  # NOTE: shared routers are rare in random policies; without them every session is refused
        network["edgeRouterPolicies"].append(
            {"name": "erp-all", "identityRoles": ["#all"], "edgeRouterRoles": ["#all"]}
        )
        network["serviceEdgeRouterPolicies"].append(
            {"name": "serp-all", "serviceRoles": ["#all"], "edgeRouterRoles": ["#all"]}
        )
    checks = [
        {
            "name": f"pc{n}",
            "typeId": "DOMAIN",
            "domains": [draw(st.sampled_from(DOMAINS))],
            "roleAttributes": draw(st.lists(ATTRIBUTES, max_size=2, unique=True)),
        }
        for n in range(draw(st.integers(0, 2)))
    ]
    if checks:
        network["postureChecks"] = checks
        check_names = st.sampled_from([c["name"] for c in checks])
        for policy in network["servicePolicies"]:
            policy["postureCheckRoles"] = sorted(
                draw(st.one_of(st.just([]), role_expressions(ATTRIBUTES, check_names, max_size=2)))
            )
    domains = {i["name"]: draw(st.sampled_from([None, *DOMAINS])) for i in network["identities"]}
    for identity in network["identities"]:
        identity.update(username=f"user-{identity['name']}", password=PASSWORD)
    return network, domains


class Live:
    """A controller holding the network, with every identity logged in on the client API."""

    def __init__(self, network: dict, domains: dict):
        self.app = create_app(clock=FrozenClock("2025-06-01T12:00:00Z"))
        self.admin = ZitiClient.in_process(self.app)
        self.admin.login("admin", "admin")
        apply(self.admin, network)
        self.ids = {
            kind: {r["name"]: r["id"] for r in self.admin.management.iterate(op, page_size=500)}
            for kind, op in (
                ("identities", "listIdentities"),
                ("services", "listServices"),
                ("edgeRouters", "listEdgeRouters"),
                ("postureChecks", "listPostureChecks"),
            )
        }
        self.clients = {}
        for identity in (i["name"] for i in network["identities"]):
            client = ZitiClient.in_process(self.app)
            client.login(f"user-{identity}", PASSWORD, api="client")
            self.clients[identity] = client
            if domains.get(identity) and self.ids["postureChecks"]:
                check_id = next(iter(self.ids["postureChecks"].values()))
                client.edge.create_posture_response(
                    body={"id": check_id, "typeId": "DOMAIN", "domain": domains[identity]}
                )

    def close(self) -> None:
        for client in (self.admin, *self.clients.values()):
            client.close()
        self.app.controller.close()

    def listed(self, identity: str) -> dict[str, list[str]]:
        return {s["name"]: s["permissions"] for s in self.clients[identity].edge.iterate("listServices", page_size=100)}

    def session(self, identity: str, service: str, ptype: str) -> tuple[tuple[int, str | None], list[str]]:
        """``POST /sessions``: ((status, error code), names of the session's edge routers)."""
        response = self.clients[identity].edge.create_session(
            body={"serviceId": self.ids["services"][service], "type": ptype}, raw=True
        )
        if response.status_code >= 400:
            return (response.status_code, response.json()["error"]["code"]), []
        return (response.status_code, None), sorted(r["name"] for r in response.json()["data"]["edgeRouters"])

    def advice(self, identity: str, service: str) -> dict:
        data = self.admin.management.get_identity_policy_advice(
            self.ids["identities"][identity], self.ids["services"][service]
        )
        routers = {v: k for k, v in self.ids["edgeRouters"].items()}
        return {
            "isDialAllowed": data["isDialAllowed"],
            "isBindAllowed": data["isBindAllowed"],
            "identityRouterCount": data["identityRouterCount"],
            "serviceRouterCount": data["serviceRouterCount"],
            "commonRouters": sorted(routers[r["id"]] for r in data["commonRouters"]),
        }


@SETTINGS
@given(drawn=postured_networks())
def test_analysis_agrees_with_services_sessions_and_advice(drawn):
    network, domains = drawn
    live = Live(network, domains)
    try:
        analysis = Analysis.from_controller(live.admin)
        declared = Analysis(network, posture={name: {"domain": d} for name, d in domains.items() if d})
        services = analysis.populations["services"].names
        for identity in live.clients:
            expected = {s: analysis.permissions(identity, s) for s in services if analysis.permissions(identity, s)}
            assert live.listed(identity) == expected, identity
            for service in services:
                assert live.advice(identity, service) == analysis.advice(identity, service), (identity, service)
                for ptype in ("Dial", "Bind"):
                    outcome, routers = live.session(identity, service, ptype)
                    event(f"session {outcome}")
                    assert outcome == analysis.session_outcome(identity, service, ptype), (identity, service, ptype)
                    assert routers == (analysis.routers_for(identity, service) if outcome[0] == 201 else [])
                    assert declared.session_outcome(identity, service, ptype) == outcome
                    assert analysis.explain(identity, service, ptype).outcome == outcome
    finally:
        live.close()


@settings(max_examples=EXAMPLES * 5, deadline=None, suppress_health_check=list(HealthCheck))
@given(drawn=postured_networks(max_size=5))
def test_suggested_fix_flips_the_decision(drawn):
    network, domains = drawn
    analysis = Analysis(network, posture={name: {"domain": d} for name, d in domains.items() if d})
    for identity in analysis.populations["identities"].names:
        for service in analysis.populations["services"].names:
            for ptype in ("Dial", "Bind"):
                ex = analysis.explain(identity, service, ptype)
                assert ex.allowed == analysis.can(identity, service, ptype) == any(c.grants for c in ex.policies)
                if ex.fix is None:
                    event("no network fix")
                    assert ex.allowed and (
                        ex.posture_ok is False or any("#all" in c.identity.roles for c in ex.policies if c.grants)
                    ), str(ex)
                    continue
                after = analysis.with_change(ex.fix)
                if not ex.allowed:
                    event("grant")
                    assert after.can(identity, service, ptype) and after.routers_for(identity, service), str(ex)
                elif not ex.common_routers:
                    event("route")
                    assert after.routers_for(identity, service), str(ex)
                else:
                    event("remove")
                    assert not after.can(identity, service, ptype), str(ex)
