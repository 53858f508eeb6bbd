"""Policy analysis on network files: matrix, explanations, posture, routers, what-if and diff."""

from __future__ import annotations

import sys

import pytest

from harness.analysis import Analysis, access_diff
from harness.analysis.posture import PostureState, evaluate, satisfies
from harness.network import Network
from harness.notebook import sample_network

POSTURE = {
    "ana.sales": {"domain": "corp.example", "os": {"type": "Windows", "version": "10.0.19045"}},
    "ben.sales": {"domain": "corp.example", "os": {"type": "Linux", "version": "6.8"}},
}
ISLANDS = {  # alice may dial web, but they share no edge router
    "identities": [{"name": "alice", "roleAttributes": ["staff"]}],
    "services": [{"name": "web", "roleAttributes": ["apps"]}],
    "edgeRouters": [{"name": "er-a", "roleAttributes": ["a"]}, {"name": "er-b", "roleAttributes": ["b"]}],
    "servicePolicies": [{"name": "staff-apps", "type": "Dial", "identityRoles": ["#staff"], "serviceRoles": ["#apps"]}],
    "edgeRouterPolicies": [
        {"name": "staff-a", "identityRoles": ["#staff"], "edgeRouterRoles": ["#a"]},
        {"name": "ops-b", "identityRoles": ["#ops"], "edgeRouterRoles": ["#b"]},
    ],
    "serviceEdgeRouterPolicies": [{"name": "apps-b", "serviceRoles": ["#apps"], "edgeRouterRoles": ["#b"]}],
}


@pytest.fixture
def company() -> Network:
    return Network.from_yaml(sample_network("company"))


def test_matrix_lists_every_pair_with_dial_bind_and_routers(company):
    matrix = Analysis(company).matrix()
    assert matrix["ana.sales", "crm"] == {"dial": True, "bind": False, "routers": ["er-eu-1", "er-eu-2", "er-us-1"]}
    assert matrix["crm-server", "crm"]["bind"] and matrix["crm-server", "crm"]["routers"] == ["er-dc"]
    with pytest.raises(KeyError):
        matrix["eve.contractor", "crm"]
    assert len(matrix) == len(list(matrix)) == 14
    assert matrix.counts() == {
        "identities": 7,
        "services": 5,
        "dial": 11,
        "bind": 3,
        "any": 14,
        "usable": 14,
        "posture_fails": 0,
    }
    assert {
        "identity": "dev.ops",
        "service": "ssh",
        "dial": True,
        "bind": False,
        "routers": ["er-eu-1", "er-eu-2", "er-us-1"],
    } in matrix.rows()


def test_matrix_tables_mark_dial_bind_and_missing_routers():
    analysis = Analysis(ISLANDS)
    assert analysis.matrix().codes().tolist() == [[1]]  # dial, no shared router
    assert analysis.matrix_frame().loc["alice", "web"] == "D"
    assert analysis.matrix_frame(with_routers=True).loc["alice", "web"] == "d"
    assert analysis.matrix().long_frame().to_dict("records") == [
        {"identity": "alice", "service": "web", "dial": True, "bind": False, "routers": 0}
    ]


def test_tables_say_how_to_get_pandas_when_it_is_missing(company, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="notebooks"):
        Analysis(company).explain("ana.sales", "crm").frame()


def test_explain_names_each_policy_role_and_the_routers_linking_both_sides(company):
    ex = Analysis(company).explain("ana.sales", "crm")
    assert ex.allowed and ex.can_connect and ex.outcome == (201, None)
    assert [c.policy for c in ex.policies][0] == "sales-crm" and ex.policies[
        0
    ].identity.reason == "has all of ['sales']"
    assert ex.identity_routers["er-eu-1"] == ["eu-staff-eu-routers", "everyone-public"]
    assert ex.service_routers["er-eu-1"] == ["eu-services-eu", "all-public"]
    assert ex.common_routers == ["er-eu-1", "er-eu-2", "er-us-1"]
    assert "posture corp-domain (DOMAIN) not evaluated" in str(ex)
    assert ex.suggestion.startswith("to remove access: remove attribute(s) ['sales'] from ana.sales")
    assert ex.routers_frame().set_index("router").loc["er-dc", "common"] == False  # noqa: E712


def test_explain_evaluates_posture_checks_from_reported_data(company):
    analysis = Analysis(company, posture=POSTURE)
    ana, ben = analysis.explain("ana.sales", "crm"), analysis.explain("ben.sales", "crm")
    assert ana.can_connect and ana.posture_ok is True
    assert not ben.can_connect and ben.posture_ok is False and ben.outcome == (409, "INVALID_POSTURE")
    failing = [str(r) for c in ben.policies if c.grants for r in c.posture if r.passing is False]
    assert failing == ["supported-os (OS) FAILS: reported Linux 6.8, needs Windows >=10.0.0 or macOS >=13.0.0"]
    assert ben.suggestion == "allowed, but posture fails: supported-os: run Windows >=10.0.0" and ben.fix is None
    assert analysis.explain("eve.contractor", "wiki").posture_ok is True  # staff-wiki has no checks


def test_explain_says_what_is_missing_and_the_cheapest_fix(company):
    analysis = Analysis(company)
    ex = analysis.explain("eve.contractor", "ssh")
    assert not ex.allowed and ex.outcome == (404, "NOT_FOUND")
    assert ex.suggestion == "add @eve.contractor to ops-ssh's identity roles (policy ops-ssh)"
    assert analysis.what_if(ex.fix).gained == [("eve.contractor", "ssh", "Dial")]
    bind = analysis.explain("crm-server", "crm", "Dial")
    assert bind.other_types == ["Bind"] and bind.outcome == (400, "COULD_NOT_VALIDATE")
    assert "it may bind" in bind.headline()


def test_explain_names_a_missing_shared_router_and_how_to_add_one():
    analysis = Analysis(ISLANDS)
    ex = analysis.explain("alice", "web")
    assert ex.allowed and not ex.can_connect and ex.outcome == (400, "NO_EDGE_ROUTERS_AVAILABLE")
    assert ex.headline() == "alice CANNOT dial web: allowed, but no edge router is shared"
    # naming alice in the policy, not giving her the #ops attribute (which says who she is)
    assert ex.suggestion == "add @alice to ops-b's identity roles"
    assert analysis.with_change(ex.fix).routers_for("alice", "web") == ["er-b"]
    assert analysis.advice("alice", "web") == {
        "isDialAllowed": True,
        "isBindAllowed": False,
        "identityRouterCount": 1,
        "serviceRouterCount": 1,
        "commonRouters": [],
    }


def test_unknown_names_are_reported_by_kind(company):
    with pytest.raises(KeyError, match="unknown identity 'mallory'"):
        Analysis(company).explain("mallory", "crm")


def test_what_if_lists_who_gains_and_loses_what(company):
    analysis = Analysis(company)
    diff = analysis.what_if(
        {
            "servicePolicies": [{"name": "ops-ssh", "identityRoles": ["#ops", "#contractors"]}],
            "identities": [{"name": "dev.ops", "_delete": True}],
        }
    )
    assert diff.gained == [("eve.contractor", "ssh", "Dial")]
    assert diff.lost == [("dev.ops", "ssh", "Dial"), ("dev.ops", "wiki", "Dial")]
    assert ("eve.contractor", "ssh") in diff.connected
    assert "+ eve.contractor may dial ssh" in diff.lines()
    assert set(diff.frame()["change"]) == {"gained", "lost"}
    assert not analysis.what_if(lambda network: None)


def test_access_diff_compares_states_with_different_services(company):
    before = Analysis(company)
    data = company.to_dict()
    data["services"].append({"name": "chat", "roleAttributes": ["all-staff-apps"]})
    after = Analysis(data)
    diff = access_diff(before, after)
    assert {(i, s) for i, s, _ in diff.gained} == {
        (n, "chat") for n in ("ana.sales", "ben.sales", "cara.finance", "dev.ops", "eve.contractor")
    }
    assert not diff.lost and str(access_diff(after, after)) == "no change in access"


def test_role_semantics_follow_the_reference_rule():
    network = {
        "identities": [{"name": "i1", "roleAttributes": ["a", "b"]}, {"name": "i2", "roleAttributes": ["a"]}],
        "services": [{"name": "s1"}],
        "servicePolicies": [
            {"name": "p", "type": "Bind", "semantic": "allof", "identityRoles": ["#a", "#b"], "serviceRoles": ["@s1"]},
            {"name": "empty", "type": "Dial", "identityRoles": [], "serviceRoles": ["#all"]},
        ],
    }
    analysis = Analysis(network)
    assert analysis.identities_of("s1", "Bind") == ["i1"] and analysis.identities_of("s1", "Dial") == []
    assert analysis.explain("i2", "s1", "Bind").policies[0].identity.reason == "lacks ['b'] (AllOf ['a', 'b'])"


# -- posture rules ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "version, ranges, ok",
    [
        ("10.0.19045", ">=10.0.0", True),
        ("9.9", ">=10.0.0", False),
        ("13.5", ">=10.0.0 <14 || 15.x", True),
        ("15.2.1", ">=10.0.0 <14 || 15.x", True),
        ("14.0.0", ">=10.0.0 <14 || 15.x", False),
        ("6.1", "6.1.0", True),
        ("", ">=1", False),
        ("abc", ">=1", False),
    ],
)
def test_version_ranges(version, ranges, ok):
    assert satisfies(version, ranges) is ok


def test_posture_state_reads_the_management_posture_data_reply():
    state = PostureState.coerce(
        {
            "os": {"type": "Windows", "version": "11.0.1"},
            "domain": {"domain": "corp.example"},
            "mac": {"addresses": ["AA:BB:CC:00:11:22"]},
            "processes": [],
            "apiSessionPostureData": {"s1": {"mfa": {"passedMfa": True}}},
        }
    )
    assert state == PostureState("corp.example", "Windows", "11.0.1", frozenset({"aabbcc001122"}), True)
    assert evaluate({"name": "m", "typeId": "MAC", "macAddresses": ["aa-bb-cc-00-11-22"]}, state).passing is True
    assert evaluate({"name": "f", "typeId": "MFA"}, state).passing is True
    assert evaluate({"name": "p", "typeId": "PROCESS"}, state).passing is None
    assert evaluate({"name": "p", "typeId": "PROCESS"}, PostureState(passing=frozenset({"p"}))).passing is True


def test_the_analysis_benchmark_runs():
    from benchmarks.analysis import main

    figures = main(quick=True)  # figures are printed by `python -m benchmarks`, never asserted
    assert {"matrix total s", "explain p50 ms", "explain AllOf, no #all p50 ms"} <= set(figures)


def test_the_smallest_change_names_an_employee_in_a_policy_rather_than_making_them_a_contractor():
    network = {
        "identities": [
            {"name": "emp", "roleAttributes": ["staff"]},
            {"name": "con", "roleAttributes": ["contractors"]},
        ],
        "services": [{"name": "ledger", "roleAttributes": ["finance"]}],
        "edgeRouters": [{"name": "er-c", "roleAttributes": ["public"]}],
        "servicePolicies": [
            {"name": "staff-ledger", "type": "Dial", "identityRoles": ["#staff"], "serviceRoles": ["#finance"]}
        ],
        "edgeRouterPolicies": [
            {"name": "contractors-public", "identityRoles": ["#contractors"], "edgeRouterRoles": ["#public"]}
        ],
        "serviceEdgeRouterPolicies": [{"name": "all", "serviceRoles": ["#all"], "edgeRouterRoles": ["#all"]}],
    }
    analysis = Analysis(network)
    ex = analysis.explain("emp", "ledger")
    assert ex.allowed and not ex.can_connect
    assert ex.suggestion == "add @emp to contractors-public's identity roles"
    assert "contractors" not in str(ex.fix.get("identities", ""))
    after = analysis.with_change(ex.fix)
    assert after.routers_for("emp", "ledger") == ["er-c"]
    assert after.explain("emp", "ledger").can_connect


def test_advice_says_when_only_an_attribute_change_works():
    from harness.analysis.explain import ONLY_ATTRIBUTE, _cheapest

    attr = {"identities": [{"name": "emp", "roleAttributes": ["ops"]}]}
    policy = {"servicePolicies": [{"name": "p", "identityRoles": ["@emp"]}]}
    assert _cheapest([(1.0, "add attribute(s) ['ops'] to identity emp", attr)])[0].endswith(ONLY_ATTRIBUTE)
    text, fix = _cheapest([(1.0, "add attribute(s) ['ops'] to identity emp", attr), (3.0, "add @emp to p", policy)])
    assert fix is attr and not text.endswith(ONLY_ATTRIBUTE)
